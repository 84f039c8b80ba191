import { CopyButton } from "./CopyButton.jsx";
import { Dialog } from "./Dialog.jsx";

/**
 * An invitation the mail server did not take: why, and its link for the admin to
 * hand over. `help` says what else can be done (who can look at the mail settings).
 */
export function InvitationLink({
  invitation,
  onClose,
  help = "The operator can check the appliance's mail settings.",
}) {
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
        Send it to the person yourself (chat, another mail account). {help}
      </p>
    </Dialog>
  );
}

/**
 * What to tell the admin after making `name` (a profile, or an organisation with
 * its first admin) and perhaps inviting someone: {type, message} of a notification.
 */
export function invitationNote(name, invitation) {
  if (!invitation) return { type: "positive", message: `Created ${name}` };
  if (invitation.mailed)
    return {
      type: "positive",
      message: `Created ${name}; ${invitation.detail.replace(/^An/, "an")}`,
    };
  return {
    type: "warning",
    message: `Created ${name}, but the invitation was not mailed: copy its link.`,
  };
}
