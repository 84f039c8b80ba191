import { useLocation, useNavigate, useParams } from "react-router";
import { InvitationLink } from "../../../components/InvitationLink.jsx";
import { PageHeader } from "../../../components/lists.jsx";
import { errorText } from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { formatTime } from "../../../lib/format.js";
import { useProfile } from "../api/getProfile.js";
import { useUpdateProfile } from "../api/updateProfile.js";
import { ProfileForm } from "../components/ProfileForm.jsx";
import {
  invitable,
  isSelf,
  useProfileActions,
} from "../components/useProfileActions.js";

export function ProfileDetail() {
  const { pid } = useParams();
  const { data: profile, error, mutate } = useProfile(pid);
  usePageTitle(profile ? `Profile ${profile.username}` : "Profile");
  const navigate = useNavigate();
  const update = useUpdateProfile();
  const self = isSelf(profile);
  const location = useLocation();
  // an invitation the mail server did not take (from creating the profile, or the invite button)
  const { notify, invite, destroy, invitation, setInvitation } =
    useProfileActions((location.state && location.state.invitation) || null);

  async function save(body) {
    const saved = await update(profile.id, body);
    await mutate(saved, { revalidate: false });
    notify(`Saved ${saved.username}`, { type: "positive" });
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
        {invitable(profile) ? (
          <button className="secondary" onClick={() => invite(profile)}>
            Send invitation
          </button>
        ) : null}
        <button
          className="danger"
          onClick={async () => {
            if (await destroy(profile)) navigate("/admin/profiles");
          }}
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
