import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

export const deleteProfile = (id) => api.delete(`profiles/${id}/`);

export function useDeleteProfile() {
  const revalidate = useRevalidate();
  return async (id) => {
    await deleteProfile(id);
    await revalidate("profiles/", "dashboard/");
  };
}
