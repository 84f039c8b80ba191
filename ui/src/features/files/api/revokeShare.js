import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** DELETE shares/{id}/: the link stops working for good (it stays listed as revoked). */
export const revokeShare = (id) => api.delete(`shares/${id}/`);

export function useRevokeShare() {
  const revalidate = useRevalidate();
  return async (id) => {
    await revokeShare(id);
    await revalidate("shares/");
  };
}
