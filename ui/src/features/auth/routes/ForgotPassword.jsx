import { useState } from "react";
import { Link } from "react-router";
import { FormErrors, TextField, useForm } from "../../../components/forms.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import {
  RESET_SENT,
  requestPasswordReset,
} from "../api/requestPasswordReset.js";

export function ForgotPassword() {
  usePageTitle("Forgot password");
  const [sent, setSent] = useState(false);
  const form = useForm({ email: "" });
  return (
    <form
      className="card"
      onSubmit={form.submit(async (values) => {
        await requestPasswordReset(values);
        setSent(true);
      })}
    >
      <h1>Forgot password</h1>
      {sent ? (
        <p role="status">{RESET_SENT}</p>
      ) : (
        <>
          <p>
            Enter your email address and we send you a link to choose a new
            password.
          </p>
          <TextField
            form={form}
            name="email"
            label="Email"
            type="email"
            autoComplete="email"
            required
          />
          <FormErrors form={form} />
          <div className="actions">
            <button type="submit" disabled={form.busy}>
              Send link
            </button>
          </div>
        </>
      )}
      <p>
        <Link to="/auth/login">Back to sign in</Link>
      </p>
    </form>
  );
}
