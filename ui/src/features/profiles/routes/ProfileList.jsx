import { ResourceListPage, yesNo } from "../../../components/lists.jsx";
import { formatTime } from "../../../lib/format.js";
import { useProfiles } from "../api/getProfiles.js";

const COLUMNS = [
  ["Username", (p) => p.username],
  ["Email", (p) => p.email],
  ["Admin", (p) => (p.is_admin ? "yes" : "")],
  ["Active", (p) => yesNo(p.active)],
  ["Home", (p) => p.home],
  ["Last login", (p) => formatTime(p.last_login, "never")],
];

export function ProfileList() {
  return (
    <ResourceListPage
      title="Profiles"
      createTo="/admin/profiles/create"
      useList={useProfiles}
      columns={COLUMNS}
      rowLink={(p) => `/admin/profiles/${p.id}`}
    />
  );
}
