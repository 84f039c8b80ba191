import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

export const updateSource = (id, changes) =>
  api.patch(`sources/${id}/`, changes);

export function useUpdateSource() {
  const revalidate = useRevalidate();
  return async (id, changes) => {
    const saved = await updateSource(id, changes);
    await revalidate("sources/");
    return saved;
  };
}
