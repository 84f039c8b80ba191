import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** DELETE organisation/{id}/logo/: back to the default logo. */
export const removeLogo = (id) => api.delete(`organisation/${id}/logo/`);

export function useRemoveLogo() {
  const revalidate = useRevalidate();
  return async (id) => {
    const saved = await removeLogo(id);
    await revalidate("organisation/", "branding/");
    return saved;
  };
}
