import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** PATCH god/organisations/{id}/ {status, trial_ends_at}. */
export const changeOrganisation = (id, changes) =>
  api.patch(`god/organisations/${id}/`, changes);

export function useChangeOrganisation() {
  const revalidate = useRevalidate();
  return async (id, changes) => {
    const saved = await changeOrganisation(id, changes);
    await revalidate("god/organisations/", "organisation/");
    return saved;
  };
}
