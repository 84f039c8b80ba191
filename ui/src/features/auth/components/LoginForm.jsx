import { useState } from "react";
import { Link, useNavigate } from "react-router";
import { login, refusal } from "../api/login.js";

export function LoginForm({ onSignedIn }) {
  const navigate = useNavigate();
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  async function submit(event) {
    event.preventDefault();
    const form = new FormData(event.target);
    setBusy(true);
    setError("");
    try {
      onSignedIn(
        await login({
          username: form.get("username"),
          password: form.get("password"),
        }),
      );
    } catch (e) {
      // wrong credentials: console-spec §8's one message; the server's other reasons as they are
      const refused = refusal(e);
      setBusy(false);
      if (refused.redirect) navigate(refused.redirect);
      else setError(refused.message);
    }
  }
  return (
    <form className="card" onSubmit={submit}>
      <h1>Sign in</h1>
      <label className="field">
        <span>Username</span>
        <input name="username" autoComplete="username" required />
      </label>
      <label className="field">
        <span>Password</span>
        <input
          name="password"
          type="password"
          autoComplete="current-password"
          required
        />
      </label>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      <div className="actions spread">
        <Link to="/auth/forgot-password">Forgot password?</Link>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </div>
    </form>
  );
}
