import { api, setSession } from "../../../lib/api.js";

export const LOGIN_FAILED = "These credentials do not match our records.";

/** POST token/ {username, password}: stores the user (access, refresh, username, is_admin, ...). */
export async function login({ username, password }) {
  const user = await api.post("token/", { username, password });
  setSession(user);
  return user;
}
