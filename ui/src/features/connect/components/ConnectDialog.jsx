import { Dialog } from "../../../components/Dialog.jsx";
import { ConnectionDetails } from "./ConnectionDetails.jsx";

export const NO_SOURCE =
  "You have no source configured. Ask your administrator to assign one to you.";
export const assignedTo = (source) =>
  `You have been assigned to the source ${source}.`;

/** The 'How do I connect?' dialog: the source sentence (console-spec §2) and the details. */
export function ConnectDialog({ information, onClose }) {
  const source = information && information.source;
  return (
    <Dialog
      title="How do I connect?"
      onClose={onClose}
      actions={<button onClick={onClose}>Close</button>}
    >
      {source ? (
        <p className="positive-text">{assignedTo(source)}</p>
      ) : (
        <p className="error">{NO_SOURCE}</p>
      )}
      <ConnectionDetails information={information} />
    </Dialog>
  );
}
