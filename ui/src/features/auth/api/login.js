import { api, setSession } from "../../../lib/api.js";

export const LOGIN_FAILED = "These credentials do not match our records.";
export const ORGANISATION_DELETED =
  "Your organisation has been deleted, so nobody in it can sign in. If this is a mistake, ask the operator of this portal.";

/** POST token/ {username, password}: stores the user (access, refresh, username, is_admin, ...). */
export async function login({ username, password }) {
  const user = await api.post("token/", { username, password });
  setSession(user);
  return user;
}

/** "14:35" (or a date and time when it is not today): when a ban ends. */
function clockTime(moment, now) {
  const sameDay = moment.toDateString() === now.toDateString();
  return sameDay
    ? moment.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : moment.toLocaleString([], {
        dateStyle: "medium",
        timeStyle: "short",
      });
}

/**
 * What the login page does with a refused sign-in: {redirect} to another page, or
 * {message} to show. Wrong credentials keep the one message of console-spec §8 (it
 * never says whether the account exists); the server's other reasons (its `code`)
 * are told as they are: payment missing leads to /auth/billing, a deleted
 * organisation says so, a ban says when to try again.
 */
export function refusal(error, now = new Date()) {
  const status = error && error.status;
  const data = (error && error.data) || {};
  const detail = typeof data.detail === "string" ? data.detail : "";
  if (status === 0 && detail) return { message: detail }; // no reply at all
  if (status !== 401 || !data.code || data.code === "invalid_credentials") {
    if (status >= 500 && detail) return { message: detail };
    return { message: LOGIN_FAILED };
  }
  if (data.code === "payment_missing") return { redirect: "/auth/billing" };
  if (data.code === "organisation_deleted")
    return { message: ORGANISATION_DELETED };
  if (data.code === "banned" && Number(data.retry_after) > 0) {
    const until = new Date(now.getTime() + Number(data.retry_after) * 1000);
    return {
      message: `${detail || "Too many failed sign-ins."} (You can sign in again at ${clockTime(until, now)}.)`,
    };
  }
  return { message: detail || LOGIN_FAILED };
}
