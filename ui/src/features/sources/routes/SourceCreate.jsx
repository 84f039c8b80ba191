import { useNavigate } from "react-router";
import { PageHeader } from "../../../components/lists.jsx";
import { useNotify } from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { useCreateSource } from "../api/createSource.js";
import { SourceForm } from "../components/SourceForm.jsx";

export function SourceCreate() {
  usePageTitle("Create a source");
  const navigate = useNavigate();
  const notify = useNotify();
  const create = useCreateSource();
  async function submit(body) {
    const source = await create(body);
    notify(
      source.status === "error"
        ? `Created ${source.name}, but: ${source.last_error}`
        : `Created ${source.name}`,
      { type: source.status === "error" ? "warning" : "positive" },
    );
    navigate(`/admin/sources/${source.id}`);
  }
  return (
    <>
      <PageHeader
        title="Create a source"
        back={["/admin/sources", "Sources"]}
      />
      <SourceForm onSubmit={submit} submitLabel="Create" />
    </>
  );
}
