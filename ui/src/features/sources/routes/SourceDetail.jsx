import { useNavigate, useParams } from "react-router";
import { useConfirm } from "../../../components/Dialog.jsx";
import { PageHeader } from "../../../components/lists.jsx";
import { errorText, useNotify } from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { useCheckSource } from "../api/checkSource.js";
import { useDeleteSource } from "../api/deleteSource.js";
import { useSource } from "../api/getSource.js";
import { useUpdateSource } from "../api/updateSource.js";
import { SourceForm } from "../components/SourceForm.jsx";
import { SourceStatus } from "../components/SourceStatus.jsx";

export function SourceDetail() {
  const { pid } = useParams();
  const { data: source, error, mutate } = useSource(pid);
  usePageTitle(source ? `Source ${source.name}` : "Source");
  const navigate = useNavigate();
  const notify = useNotify();
  const confirm = useConfirm();
  const update = useUpdateSource();
  const check = useCheckSource();
  const remove = useDeleteSource();

  async function save(body) {
    const saved = await update(source.id, body);
    await mutate(saved, { revalidate: false });
    notify(`Saved ${saved.name}`, { type: "positive" });
  }
  async function tryIt() {
    try {
      const checked = await check(source.id);
      await mutate(checked, { revalidate: false });
      notify(
        checked.status === "ok"
          ? `${checked.name} works`
          : `${checked.name}: ${checked.last_error}`,
        {
          type: checked.status === "ok" ? "positive" : "negative",
        },
      );
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }
  async function destroy() {
    const sure = await confirm({
      title: "Delete the source",
      message: `Delete ${source.name}? Profiles and mailboxes using it lose it. The files themselves are not deleted.`,
    });
    if (!sure) return;
    try {
      await remove(source.id);
      notify(`Deleted ${source.name}`, { type: "positive" });
      navigate("/admin/sources");
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }

  if (error) {
    return (
      <>
        <PageHeader title="Source" back={["/admin/sources", "Sources"]} />
        <p className="error" role="alert">
          {errorText(error)}
        </p>
      </>
    );
  }
  if (!source) return <p>Loading…</p>;
  return (
    <>
      <PageHeader title={source.name} back={["/admin/sources", "Sources"]}>
        <button className="secondary" onClick={tryIt}>
          Check now
        </button>
        <button className="danger" onClick={destroy}>
          Delete
        </button>
      </PageHeader>
      <p className="meta">
        Status <SourceStatus source={source} />
        {source.last_error ? (
          <span className="error"> {source.last_error}</span>
        ) : null}
      </p>
      <SourceForm
        key={source.id}
        source={source}
        onSubmit={save}
        submitLabel="Save"
      />
    </>
  );
}
