import { useState } from "react";
import { errorText } from "../../../components/notifications.jsx";
import { authorizeSource } from "../api/authorizeSource.js";

/** Whether a source signs in with an OpenID Connect provider. */
export const signsInWithProvider = (source) =>
  Boolean(source && source.type === "s3" && source.config.auth === "oauth2");

/**
 * "Sign in with the provider": asks the appliance for the provider's sign-in URL
 * (a new state and PKCE challenge each time) and sends the browser there; the
 * provider sends it back to /admin/sources/callback.
 */
export function SignInWithProvider({
  source,
  assign = (url) => window.location.assign(url),
}) {
  const [state, setState] = useState({ busy: false, problem: "" });
  if (!signsInWithProvider(source)) return null;
  const needed = source.status !== "ok";
  async function start() {
    setState({ busy: true, problem: "" });
    try {
      const { url } = await authorizeSource(source.id);
      assign(url);
    } catch (error) {
      setState({ busy: false, problem: errorText(error) });
    }
  }
  return (
    <div className="check-connection">
      <button
        type="button"
        className={needed ? "" : "secondary"}
        onClick={start}
        disabled={state.busy}
      >
        {state.busy ? "Opening the provider…" : "Sign in with the provider"}
      </button>
      <span role="status" className={state.problem ? "error" : "help"}>
        {state.problem
          ? ` ${state.problem}`
          : source.config.oauth && source.config.oauth.signed_in
            ? " Signed in: sign in again to replace the saved sign-in."
            : " Not signed in yet."}
      </span>
    </div>
  );
}
