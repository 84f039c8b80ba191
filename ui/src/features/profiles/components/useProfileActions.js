import { useState } from "react";
import { useConfirm } from "../../../components/Dialog.jsx";
import {
  errorText,
  useAttemptNotify,
} from "../../../components/notifications.jsx";
import { getSession } from "../../../lib/api.js";
import { useDeleteProfile } from "../api/deleteProfile.js";
import { inviteProfile } from "../api/inviteProfile.js";

/** Whether a profile can be sent an invitation: it has an address and no password yet. */
export const invitable = (profile) =>
  Boolean(profile && profile.email && !profile.has_password);

/** Whether `profile` is the signed-in admin's own (who cannot delete themselves). */
export const isSelf = (profile) => {
  const session = getSession();
  return Boolean(profile && session && session.id === profile.id);
};

/**
 * What an admin does to a profile from its page or its row in the list: invite it
 * (an invitation the mail server did not take is kept in `invitation`, for its link
 * to be shown) and delete it after confirming (`destroy` says whether it was).
 */
export function useProfileActions(initialInvitation = null) {
  const notify = useAttemptNotify();
  const confirm = useConfirm();
  const remove = useDeleteProfile();
  const [invitation, setInvitation] = useState(initialInvitation);

  async function invite(profile) {
    try {
      const reply = await inviteProfile(profile.id);
      if (reply.mailed === false) setInvitation(reply);
      else notify(reply.detail, { type: "positive" });
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }

  async function destroy(profile) {
    const sure = await confirm({
      title: "Delete the profile",
      message: `Delete ${profile.username}? They can no longer sign in. Their files stay in the source.`,
    });
    if (!sure) return false;
    try {
      await remove(profile.id);
      notify(`Deleted ${profile.username}`, { type: "positive" });
      return true;
    } catch (e) {
      notify(errorText(e), { type: "negative" });
      return false;
    }
  }

  return { notify, invite, destroy, invitation, setInvitation };
}
