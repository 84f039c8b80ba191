import { useState } from "react";
import { Link } from "react-router";
import { FormErrors, TextField, useForm } from "../../../components/forms.jsx";
import { SIGN_IN_PASSWORD_HELP } from "../../../lib/passwords.js";
import { confirmPasswordReset } from "../api/confirmPasswordReset.js";

/** New password from a reset link or an invitation (uid and token from the link). */
export function ChoosePasswordForm({ uid, token, title, intro }) {
  const [done, setDone] = useState(false);
  const form = useForm({ new_password1: "", new_password2: "" });
  if (!uid || !token) {
    return (
      <div className="card">
        <h1>{title}</h1>
        <p className="error" role="alert">
          This link is incomplete. Open the whole link from your email, or ask
          for a new one.
        </p>
        <p>
          <Link to="/auth/forgot-password">Ask for a new link</Link>
        </p>
      </div>
    );
  }
  if (done) {
    return (
      <div className="card">
        <h1>{title}</h1>
        <p role="status">Your password is set.</p>
        <p>
          <Link to="/auth/login">Sign in</Link>
        </p>
      </div>
    );
  }
  return (
    <form
      className="card"
      onSubmit={form.submit(async (values) => {
        await confirmPasswordReset({ uid, token, ...values });
        setDone(true);
      })}
    >
      <h1>{title}</h1>
      {intro ? <p>{intro}</p> : null}
      <TextField
        form={form}
        name="new_password1"
        label="New password"
        type="password"
        autoComplete="new-password"
        help={SIGN_IN_PASSWORD_HELP}
        required
      />
      <TextField
        form={form}
        name="new_password2"
        label="Repeat the password"
        type="password"
        autoComplete="new-password"
        required
      />
      <FormErrors form={form} />
      {form.errors.uid || form.errors.token ? (
        <p>
          <Link to="/auth/forgot-password">Ask for a new link</Link>
        </p>
      ) : null}
      <div className="actions">
        <button type="submit" disabled={form.busy}>
          Set password
        </button>
      </div>
    </form>
  );
}
