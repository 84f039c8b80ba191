import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

export const deleteSource = (id) => api.delete(`sources/${id}/`);

export function useDeleteSource() {
  const revalidate = useRevalidate();
  return async (id) => {
    await deleteSource(id);
    await revalidate("sources/");
  };
}
