import { useState } from "react";
import { Link } from "react-router";
import { LOGIN_FAILED, login } from "../api/login.js";

export function LoginForm({ onSignedIn }) {
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
    } catch {
      setError(LOGIN_FAILED); // console-spec §8: any failure
      setBusy(false);
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
