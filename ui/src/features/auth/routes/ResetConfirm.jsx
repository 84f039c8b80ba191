import { useParams } from "react-router";
import { usePageTitle } from "../../../components/PageMeta.js";
import { ChoosePasswordForm } from "../components/ChoosePasswordForm.jsx";

/** /auth/{uid}/{token}: the link of a password reset mail. */
export function ResetConfirm() {
  usePageTitle("Choose a new password");
  const { uid, token } = useParams();
  return (
    <ChoosePasswordForm uid={uid} token={token} title="Choose a new password" />
  );
}
