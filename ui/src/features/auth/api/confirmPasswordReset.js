import { api } from "../../../lib/api.js";

/** POST password/reset/confirm/: a reset link's or an invitation's new password. */
export const confirmPasswordReset = ({
  uid,
  token,
  new_password1,
  new_password2,
}) =>
  api.post("password/reset/confirm/", {
    uid,
    token,
    new_password1,
    new_password2,
  });
