import { api, clearSession, getSession } from "../../../lib/api.js";

/** Forget the session here and end it on the server (best effort). */
export function logout() {
  const session = getSession();
  clearSession();
  if (session && session.refresh)
    api.post("token/logout/", { refresh: session.refresh }).catch(() => {});
}
