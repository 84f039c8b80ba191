import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** POST profiles/: with a password the profile can sign in at once; without, it is invited by mail. */
export const createProfile = (body) => api.post("profiles/", body);

export function useCreateProfile() {
  const revalidate = useRevalidate();
  return async (body) => {
    const created = await createProfile(body);
    await revalidate("profiles/", "dashboard/");
    return created;
  };
}
