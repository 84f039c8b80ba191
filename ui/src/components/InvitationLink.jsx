import { CopyButton } from "../../../components/CopyButton.jsx";
import { Dialog } from "../../../components/Dialog.jsx";

/** An invitation the mail server did not take: why, and its link for the admin to hand over. */
export function InvitationLink({ invitation, onClose }) {
  return (
    <Dialog
      title="The invitation was not mailed"
      onClose={onClose}
      wide
      actions={
        <>
          <CopyButton text={invitation.link} label="Copy link" />
          <button type="button" className="flat" onClick={onClose}>
            Close
          </button>
        </>
      }
    >
      <p>{invitation.detail}</p>
      <label className="field">
        <span>Invitation link</span>
        <input
          readOnly
          value={invitation.link}
          onFocus={(event) => event.target.select()}
        />
      </label>
      <p className="help">
        Send it to the person yourself (chat, another mail account). The
        operator can check the appliance's mail settings.
      </p>
    </Dialog>
  );
}

/** What to tell the admin after an invitation: {type, message} of a notification. */
export function invitationNote(username, invitation) {
  if (!invitation) return { type: "positive", message: `Created ${username}` };
  if (invitation.mailed)
    return {
      type: "positive",
      message: `Created ${username}; ${invitation.detail.replace(/^An/, "an")}`,
    };
  return {
    type: "warning",
    message: `Created ${username}, but the invitation was not mailed: copy its link.`,
  };
}
