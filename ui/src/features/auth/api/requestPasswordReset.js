import { api } from "../../../lib/api.js";

export const RESET_SENT = "Password reset link has been sent to your email.";

/** POST password/reset/ {email}: always the same answer, whether the address exists or not. */
export const requestPasswordReset = ({ email }) =>
  api.post("password/reset/", { email });
