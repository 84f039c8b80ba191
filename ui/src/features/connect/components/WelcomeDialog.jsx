import { Dialog } from "../../../components/Dialog.jsx";
import { ConnectionDetails } from "./ConnectionDetails.jsx";

/** Shown on the dashboard when ?welcome is present (console-spec §2). */
export function WelcomeDialog({ information, onClose }) {
  return (
    <Dialog
      title="Welcome"
      onClose={onClose}
      actions={<button onClick={onClose}>Close</button>}
    >
      <p>
        Besides this web page, you can move files with any SFTP or FTP client:
      </p>
      <ConnectionDetails information={information} />
    </Dialog>
  );
}
