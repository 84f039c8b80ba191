import { useNavigate } from "react-router";
import { PageHeader } from "../../../components/lists.jsx";
import { useNotify } from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { useCreateProfile } from "../api/createProfile.js";
import { ProfileForm } from "../components/ProfileForm.jsx";

export function ProfileCreate() {
  usePageTitle("Create a profile");
  const navigate = useNavigate();
  const notify = useNotify();
  const create = useCreateProfile();
  async function submit(body) {
    const profile = await create(body);
    notify(
      body.password
        ? `Created ${profile.username}`
        : `Created ${profile.username}; an invitation was sent to ${profile.email}`,
      { type: "positive" },
    );
    navigate(`/admin/profiles/${profile.id}`);
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
