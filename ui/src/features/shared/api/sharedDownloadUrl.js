import { apiUrl } from "../../../lib/api.js";

/** The address that downloads the shared file (or `path` inside a shared folder): a plain link. */
export const sharedDownloadUrl = (token, path, access) =>
  apiUrl(`shared/${encodeURIComponent(token)}/download/`, { path, access });
