import { useState } from "react";
import { useNavigate, useParams } from "react-router";
import { useConfirm } from "../../../components/Dialog.jsx";
import { PageHeader } from "../../../components/lists.jsx";
import {
  errorText,
  useAttemptNotify,
} from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { useDeleteSource } from "../api/deleteSource.js";
import { useSource } from "../api/getSource.js";
import { useUpdateSource } from "../api/updateSource.js";
import { CheckConnection } from "../components/CheckConnection.jsx";
import {
  DeleteSourceDialog,
  NOT_DELETABLE,
} from "../components/DeleteSourceDialog.jsx";
import { SignInWithProvider } from "../components/SignInWithProvider.jsx";
import { SourceForm } from "../components/SourceForm.jsx";
import { SourceStatus } from "../components/SourceStatus.jsx";
import { typeLabel } from "../components/sourceTypes.js";

export function SourceDetail() {
  const { pid } = useParams();
  const { data: source, error, mutate } = useSource(pid);
  usePageTitle(source ? `Source ${source.name}` : "Source");
  const navigate = useNavigate();
  const notify = useAttemptNotify();
  const confirm = useConfirm();
  const update = useUpdateSource();
  const remove = useDeleteSource();
  const [saves, setSaves] = useState(0);
  const [deleting, setDeleting] = useState(false);

  async function save(body) {
    const saved = await update(source.id, body);
    await mutate(saved, { revalidate: false });
    setSaves((n) => n + 1); // a fresh form: typed secrets gone, new pin shown
    notify(`Saved ${saved.name}`, { type: "positive" });
  }
  async function makeDefault() {
    try {
      const saved = await update(source.id, { default: true });
      await mutate(saved, { revalidate: false });
      notify(`${saved.name} is now the organisation's default source`, {
        type: "positive",
      });
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }
  function deleted(files) {
    const what = files === "delete" ? " and its files" : "";
    notify(`Deleted ${source.name}${what}`, { type: "positive" });
    navigate("/admin/sources");
  }
  async function destroy() {
    // a local source's files are the appliance's to keep or remove: the admin chooses
    if (source.type === "local") {
      setDeleting(true);
      return;
    }
    const sure = await confirm({
      title: "Delete the source",
      message: `Delete ${source.name}? The files on the remote server are not touched. ${NOT_DELETABLE}`,
      confirm: "Delete the source",
    });
    if (!sure) return;
    try {
      await remove(source.id);
      deleted("keep");
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
        {source.default ? null : (
          <button className="secondary" onClick={makeDefault}>
            Make default
          </button>
        )}
        <button className="danger" onClick={destroy}>
          Delete
        </button>
      </PageHeader>
      <p className="meta">
        {typeLabel(source.type)} · Status <SourceStatus source={source} />
        {source.default ? (
          <>
            {" · "}
            <span className="badge positive" data-testid="default-source">
              Default source: new profiles get it
            </span>
          </>
        ) : null}
        {source.last_error ? (
          <span className="error" data-testid="last-error">
            {" "}
            {source.last_error}
          </span>
        ) : null}
      </p>
      <SignInWithProvider source={source} />
      <CheckConnection
        source={source}
        onChecked={(checked) => mutate(checked, { revalidate: false })}
      />
      <SourceForm
        key={`${source.id}:${saves}:${source.config.host_key_fingerprint || ""}`}
        source={source}
        onSubmit={save}
        submitLabel="Save"
      />
      {deleting ? (
        <DeleteSourceDialog
          source={source}
          onClose={() => setDeleting(false)}
          onDeleted={deleted}
        />
      ) : null}
    </>
  );
}
