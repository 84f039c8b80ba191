import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/**
 * POST shares/ {path, expires_at, password, max_downloads, upload_only, recipients,
 * message}: the reply's `url` (with the link's token) is shown this once.
 */
export const createShare = (body) => api.post("shares/", body);

export function useCreateShare() {
  const revalidate = useRevalidate();
  return async (body) => {
    const created = await createShare(body);
    await revalidate("shares/");
    return created;
  };
}
