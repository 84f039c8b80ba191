import { request } from "../../../lib/api.js";

/** POST shared/{token}/unlock/ {password}: {access, expires_at} for ?access=. */
export const unlockSharedLink = (token, password) =>
  request("POST", `shared/${encodeURIComponent(token)}/unlock/`, {
    body: { password },
    anonymous: true,
  });
