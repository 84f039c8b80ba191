import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** DELETE god/folders/reserved/{id}/: any organisation may use the folder from now on (audited). */
export const releaseFolder = (id) => api.delete(`god/folders/reserved/${id}/`);

export function useReleaseFolder() {
  const revalidate = useRevalidate();
  return async (id) => {
    try {
      await releaseFolder(id);
    } finally {
      // released now or already (a 404): the list shows what is left
      await revalidate("god/folders/");
    }
  };
}
