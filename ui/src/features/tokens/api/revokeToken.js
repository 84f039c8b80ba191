import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** DELETE tokens/{id}/: revokes the token (it stays listed as revoked). */
export const revokeToken = (id) => api.delete(`tokens/${id}/`);

export function useRevokeToken() {
  const revalidate = useRevalidate();
  return async (id) => {
    await revokeToken(id);
    await revalidate("tokens/");
  };
}
