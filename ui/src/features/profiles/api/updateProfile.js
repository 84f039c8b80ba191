import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** PATCH profiles/{id}/ with the changed fields. */
export const updateProfile = (id, changes) =>
  api.patch(`profiles/${id}/`, changes);

export function useUpdateProfile() {
  const revalidate = useRevalidate();
  return async (id, changes) => {
    const saved = await updateProfile(id, changes);
    await revalidate("profiles/");
    return saved;
  };
}
