import { useState } from "react";
import { useLocation, useNavigate, useParams } from "react-router";
import { useConfirm } from "../../../components/Dialog.jsx";
import { PageHeader } from "../../../components/lists.jsx";
import {
  errorText,
  useAttemptNotify,
} from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { getSession } from "../../../lib/api.js";
import { formatTime } from "../../../lib/format.js";
import { useDeleteProfile } from "../api/deleteProfile.js";
import { useProfile } from "../api/getProfile.js";
import { inviteProfile } from "../api/inviteProfile.js";
import { useUpdateProfile } from "../api/updateProfile.js";
import { InvitationLink } from "../components/InvitationLink.jsx";
import { ProfileForm } from "../components/ProfileForm.jsx";

export function ProfileDetail() {
  const { pid } = useParams();
  const { data: profile, error, mutate } = useProfile(pid);
  usePageTitle(profile ? `Profile ${profile.username}` : "Profile");
  const navigate = useNavigate();
  const notify = useAttemptNotify();
  const confirm = useConfirm();
  const update = useUpdateProfile();
  const remove = useDeleteProfile();
  const self = profile && getSession() && getSession().id === profile.id;
  const location = useLocation();
  // an invitation the mail server did not take (from creating the profile, or the invite button)
  const [invitation, setInvitation] = useState(
    (location.state && location.state.invitation) || null,
  );

  async function save(body) {
    const saved = await update(profile.id, body);
    await mutate(saved, { revalidate: false });
    notify(`Saved ${saved.username}`, { type: "positive" });
  }
  async function invite() {
    try {
      const reply = await inviteProfile(profile.id);
      if (reply.mailed === false) setInvitation(reply);
      else notify(reply.detail, { type: "positive" });
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }
  async function destroy() {
    const sure = await confirm({
      title: "Delete the profile",
      message: `Delete ${profile.username}? They can no longer sign in. Their files stay in the source.`,
    });
    if (!sure) return;
    try {
      await remove(profile.id);
      notify(`Deleted ${profile.username}`, { type: "positive" });
      navigate("/admin/profiles");
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }

  if (error) {
    return (
      <>
        <PageHeader title="Profile" back={["/admin/profiles", "Profiles"]} />
        <p className="error" role="alert">
          {errorText(error)}
        </p>
      </>
    );
  }
  if (!profile) return <p>Loading…</p>;
  return (
    <>
      <PageHeader
        title={profile.username}
        back={["/admin/profiles", "Profiles"]}
      >
        {profile.email ? (
          <button className="secondary" onClick={invite}>
            Send invitation
          </button>
        ) : null}
        <button
          className="danger"
          onClick={destroy}
          disabled={self}
          title={self ? "You cannot delete yourself" : ""}
        >
          Delete
        </button>
      </PageHeader>
      <p className="meta">
        Last login {formatTime(profile.last_login, "never")} · created{" "}
        {formatTime(profile.created_at)}
        {profile.has_password ? "" : " · has not chosen a password yet"}
      </p>
      <ProfileForm
        key={profile.id}
        profile={profile}
        onSubmit={save}
        submitLabel="Save"
      />
      {invitation ? (
        <InvitationLink
          invitation={invitation}
          onClose={() => {
            setInvitation(null);
            // not shown again on a reload
            navigate(location.pathname, { replace: true, state: null });
          }}
        />
      ) : null}
    </>
  );
}
