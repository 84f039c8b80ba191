import { api, setSession } from "../../../lib/api.js";

/** POST setup/: the first organisation and its administrator; signs them in. */
export async function setup({ organisation, username, email, password }) {
  const user = await api.post("setup/", {
    organisation,
    username,
    email,
    password,
  });
  setSession(user);
  return user;
}
