import { Link } from "react-router";
import { PageHeader, ResourceList, yesNo } from "../../../components/lists.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
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
  usePageTitle("Profiles");
  return (
    <>
      <PageHeader title="Profiles">
        <Link className="button" to="/admin/profiles/create">
          Create
        </Link>
      </PageHeader>
      <ResourceList
        useList={useProfiles}
        columns={COLUMNS}
        rowLink={(p) => `/admin/profiles/${p.id}`}
        caption="Profiles"
      />
    </>
  );
}
