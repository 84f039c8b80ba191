import { useState } from "react";
import { errorText } from "../../../components/notifications.jsx";
import { storeAccess } from "../api/access.js";
import { unlockSharedLink } from "../api/unlockSharedLink.js";

export function UnlockForm({ token, onUnlocked }) {
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  async function submit(event) {
    event.preventDefault();
    setBusy(true);
    setError("");
    try {
      const value = await unlockSharedLink(
        token,
        new FormData(event.target).get("password"),
      );
      storeAccess(token, value);
      onUnlocked(value.access);
    } catch (e) {
      setError(errorText(e));
      setBusy(false);
    }
  }
  return (
    <form onSubmit={submit}>
      <p>
        This link is protected by a password. Ask the person who sent it to you
        for the password.
      </p>
      <label className="field">
        <span>Password</span>
        <input name="password" type="password" autoComplete="off" required />
      </label>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      <div className="actions">
        <button type="submit" disabled={busy}>
          Open
        </button>
      </div>
    </form>
  );
}
