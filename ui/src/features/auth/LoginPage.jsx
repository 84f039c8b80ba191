import { useEffect, useState } from "react";
import { Link, useNavigate } from "react-router";
import { api, setSession } from "../../lib/api.js";

export const LOGIN_FAILED = "These credentials do not match our records.";

function land(navigate, user) {
  setSession(user);
  navigate(user.is_admin ? "/" : "/fileviewer", { replace: true });
}

export function LoginPage() {
  const navigate = useNavigate();
  const [initialized, setInitialized] = useState(null);
  useEffect(() => {
    api.get("initialized/").then((r) => setInitialized(r.initialized)).catch(() => setInitialized(true));
  }, []);
  if (initialized === null) return null;
  return initialized ? <LoginForm navigate={navigate} /> : <SetupForm navigate={navigate} />;
}

function LoginForm({ navigate }) {
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  async function submit(event) {
    event.preventDefault();
    const form = new FormData(event.target);
    setBusy(true);
    setError("");
    try {
      land(navigate, await api.post("token/", { username: form.get("username"), password: form.get("password") }));
    } catch {
      setError(LOGIN_FAILED);
    } finally {
      setBusy(false);
    }
  }
  return (
    <form className="card" onSubmit={submit}>
      <h1>Sign in</h1>
      <label><span>Username</span><input name="username" autoComplete="username" required /></label>
      <label><span>Password</span><input name="password" type="password" autoComplete="current-password" required /></label>
      {error ? <p className="error" role="alert">{error}</p> : null}
      <div className="actions">
        <Link to="/auth/forgot-password">Forgot password?</Link>
        <button type="submit" disabled={busy}>Sign in</button>
      </div>
    </form>
  );
}

function SetupForm({ navigate }) {
  const [errors, setErrors] = useState({});
  async function submit(event) {
    event.preventDefault();
    const form = Object.fromEntries(new FormData(event.target));
    setErrors({});
    try {
      land(navigate, await api.post("setup/", form));
    } catch (error) {
      setErrors(error.data || { detail: error.message });
    }
  }
  const fieldError = (name) => (errors[name] ? <span className="field-error">{errors[name].join(" ")}</span> : null);
  return (
    <form className="card" onSubmit={submit}>
      <h1>Set up the appliance</h1>
      <p>Create the first organisation and its administrator, who also runs the appliance.</p>
      <label><span>Organisation</span><input name="organisation" required />{fieldError("organisation")}</label>
      <label><span>Username</span><input name="username" autoComplete="username" required />{fieldError("username")}</label>
      <label><span>Email</span><input name="email" type="email" required />{fieldError("email")}</label>
      <label><span>Password</span><input name="password" type="password" autoComplete="new-password" required />{fieldError("password")}</label>
      {errors.detail ? <p className="error" role="alert">{errors.detail}</p> : null}
      <div className="actions"><button type="submit">Create</button></div>
    </form>
  );
}
