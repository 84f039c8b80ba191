import { useSearchParams } from "react-router";
import { usePageTitle } from "../../../components/PageMeta.js";
import { ChoosePasswordForm } from "../components/ChoosePasswordForm.jsx";

/** /auth/register?uid=..&token=..: an invitation; the person chooses their password. */
export function Register() {
  usePageTitle("Choose your password");
  const [params] = useSearchParams();
  return (
    <ChoosePasswordForm
      uid={params.get("uid") || ""}
      token={params.get("token") || ""}
      title="Welcome: choose your password"
      intro="An administrator of your organisation made an account for you. Choose the password you will sign in with, here and over SFTP or FTP."
    />
  );
}
