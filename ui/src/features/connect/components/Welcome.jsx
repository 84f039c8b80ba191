import { useSearchParams } from "react-router";
import { useInformation } from "../api/getInformation.js";
import { WelcomeDialog } from "./WelcomeDialog.jsx";

/** The welcome dialog while the page's address has ?welcome; Close drops the parameter. */
export function Welcome() {
  const [params, setParams] = useSearchParams();
  const { data } = useInformation();
  if (!params.has("welcome")) return null;
  const close = () => {
    const next = new URLSearchParams(params);
    next.delete("welcome");
    setParams(next, { replace: true });
  };
  return <WelcomeDialog information={data} onClose={close} />;
}
