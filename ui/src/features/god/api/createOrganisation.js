import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** POST god/organisations/ {name, subdomain, admin: {username, email, password?}}: on trial. */
export const createOrganisation = (body) =>
  api.post("god/organisations/", body);

export function useCreateOrganisation() {
  const revalidate = useRevalidate();
  return async (body) => {
    const created = await createOrganisation(body);
    await revalidate("god/organisations/");
    return created;
  };
}
