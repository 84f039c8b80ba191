import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** PATCH organisation/{id}/ {name, branding, branding_colour, user_terms, require_tls}. */
export const updateOrganisation = (id, changes) =>
  api.patch(`organisation/${id}/`, changes);

export function useUpdateOrganisation() {
  const revalidate = useRevalidate();
  return async (id, changes) => {
    const saved = await updateOrganisation(id, changes);
    await revalidate("organisation/", "branding/");
    return saved;
  };
}
