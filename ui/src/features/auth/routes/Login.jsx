import { useLocation, useNavigate } from "react-router";
import { usePageTitle } from "../../../components/PageMeta.js";
import { useInitialized } from "../api/getInitialized.js";
import { LoginForm } from "../components/LoginForm.jsx";
import { SetupForm } from "../components/SetupForm.jsx";

/** Where a user goes after signing in: back where the guard stopped them, else their start page. */
export function landingPath(user, from) {
  if (from && from !== "/" && !from.startsWith("/auth")) return from;
  return user.is_admin ? "/" : "/fileviewer";
}

export function Login() {
  const navigate = useNavigate();
  const location = useLocation();
  const initialized = useInitialized();
  usePageTitle(initialized === false ? "Set up" : "Sign in");
  if (initialized === null) return null;
  const from = location.state && location.state.from;
  if (!initialized) {
    return (
      <SetupForm onSignedIn={() => navigate("/?welcome", { replace: true })} />
    );
  }
  return (
    <LoginForm
      onSignedIn={(user) =>
        navigate(landingPath(user, from), { replace: true })
      }
    />
  );
}
