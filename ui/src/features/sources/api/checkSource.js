import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** POST sources/{id}/check/: tries the source; the reply has its status and last_error. */
export const checkSource = (id) => api.post(`sources/${id}/check/`);

export function useCheckSource() {
  const revalidate = useRevalidate();
  return async (id) => {
    const checked = await checkSource(id);
    await revalidate("sources/");
    return checked;
  };
}
