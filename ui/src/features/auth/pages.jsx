import { useState } from "react";
import { Link, useParams, useSearchParams } from "react-router";
import { api } from "../../lib/api.js";

export const RESET_SENT = "Password reset link has been sent to your email.";

export function ForgotPasswordPage() {
  const [sent, setSent] = useState(false);
  const [error, setError] = useState("");
  async function submit(event) {
    event.preventDefault();
    try {
      await api.post("password/reset/", { email: new FormData(event.target).get("email") });
      setSent(true);
    } catch (e) {
      setError((e.data && (e.data.detail || (e.data.email || []).join(" "))) || "The request failed.");
    }
  }
  return (
    <form className="card" onSubmit={submit}>
      <h1>Forgot password</h1>
      {sent ? (
        <p role="status">{RESET_SENT}</p>
      ) : (
        <>
          <label><span>Email</span><input name="email" type="email" required /></label>
          {error ? <p className="error" role="alert">{error}</p> : null}
          <div className="actions"><button type="submit">Send link</button></div>
        </>
      )}
      <p><Link to="/auth/login">Back to sign in</Link></p>
    </form>
  );
}

function ChoosePassword({ uid, token, title }) {
  const [done, setDone] = useState(false);
  const [errors, setErrors] = useState({});
  async function submit(event) {
    event.preventDefault();
    const form = new FormData(event.target);
    try {
      await api.post("password/reset/confirm/", {
        uid, token, new_password1: form.get("new_password1"), new_password2: form.get("new_password2"),
      });
      setDone(true);
    } catch (e) {
      setErrors(e.data || { detail: e.message });
    }
  }
  if (done) return <div className="card"><h1>{title}</h1><p>Your password is set. <Link to="/auth/login">Sign in</Link>.</p></div>;
  const messages = Object.values(errors).flat();
  return (
    <form className="card" onSubmit={submit}>
      <h1>{title}</h1>
      <label><span>New password</span><input name="new_password1" type="password" autoComplete="new-password" required /></label>
      <label><span>Repeat it</span><input name="new_password2" type="password" autoComplete="new-password" required /></label>
      {messages.length ? <p className="error" role="alert">{messages.join(" ")}</p> : null}
      <div className="actions"><button type="submit">Set password</button></div>
    </form>
  );
}

export function ResetPage() {
  const { uid, token } = useParams();
  return <ChoosePassword uid={uid} token={token} title="Choose a new password" />;
}

export function RegisterPage() {
  const [params] = useSearchParams();
  return <ChoosePassword uid={params.get("uid") || ""} token={params.get("token") || ""} title="Welcome: choose your password" />;
}

export function BillingPage() {
  return (
    <div className="card">
      <h1>Payment missing</h1>
      <p>
        Your organisation's subscription has no valid payment, so the portal is paused: nobody in the organisation can
        sign in or move files until it is settled. No files are deleted.
      </p>
      <p>Ask your organisation's administrator to contact the appliance's operator to settle the payment.</p>
      <p><Link to="/auth/login">Back to sign in</Link></p>
    </div>
  );
}

export function SharedPage() {
  return (
    <div className="card">
      <h1>Shared files</h1>
      <p>Open the full link you were sent to see the files shared with you.</p>
    </div>
  );
}
