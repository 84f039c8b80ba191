import { useNavigate } from "react-router";
import { PageHeader } from "../../../components/lists.jsx";
import { useNotify } from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { useCreateProfile } from "../api/createProfile.js";
import { invitationNote } from "../../../components/InvitationLink.jsx";
import { ProfileForm } from "../components/ProfileForm.jsx";

export function ProfileCreate() {
  usePageTitle("Create a profile");
  const navigate = useNavigate();
  const notify = useNotify();
  const create = useCreateProfile();
  async function submit(body) {
    const { invitation, ...profile } = await create(body);
    const note = invitationNote(profile.username, invitation);
    notify(note.message, { type: note.type });
    // an invitation that was not mailed: the profile's page offers its link to copy
    navigate(`/admin/profiles/${profile.id}`, {
      state: invitation && !invitation.mailed ? { invitation } : null,
    });
  }
  return (
    <>
      <PageHeader
        title="Create a profile"
        back={["/admin/profiles", "Profiles"]}
      />
      <ProfileForm onSubmit={submit} submitLabel="Create" />
    </>
  );
}
