import { api } from "../../../lib/api.js";

/** POST shared/{token}/upload/ (multipart) into a drop box; a taken name gets a number. */
export function uploadToSharedLink(
  token,
  access,
  file,
  { onProgress, signal } = {},
) {
  const form = new FormData();
  form.append("file", file, file.name);
  return api.upload(`shared/${encodeURIComponent(token)}/upload/`, form, {
    params: { access },
    onProgress,
    signal,
    anonymous: true,
  });
}
