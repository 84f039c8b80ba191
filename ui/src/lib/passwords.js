// What the server asks of a sign-in password (core/passwords.py: setup, every change,
// an invitation's or a reset's), said under each field where one is chosen. Share
// link passwords have their own, shorter rule.
export const SIGN_IN_PASSWORD_HELP =
  "At least 12 characters; not a common password.";
