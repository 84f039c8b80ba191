import { Link, useNavigate, useParams } from "react-router";
import { useConfirm } from "../../../components/Dialog.jsx";
import { PageHeader } from "../../../components/lists.jsx";
import {
  errorText,
  useAttemptNotify,
} from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { formatTime } from "../../../lib/format.js";
import { useRevalidate } from "../../../lib/swr.js";
import { useDeleteMailbox } from "../api/deleteMailbox.js";
import { useMailbox } from "../api/getMailbox.js";
import { runMailbox } from "../api/runMailbox.js";
import { useUpdateMailbox } from "../api/updateMailbox.js";
import { MailboxForm } from "../components/MailboxForm.jsx";
import { savedNote } from "../components/savedNote.js";

export function MailboxDetail() {
  const { pid } = useParams();
  const { data: mailbox, error, mutate } = useMailbox(pid);
  usePageTitle(mailbox ? `Mailbox ${mailbox.name}` : "Mailbox");
  const navigate = useNavigate();
  const notify = useAttemptNotify();
  const confirm = useConfirm();
  const update = useUpdateMailbox();
  const remove = useDeleteMailbox();
  const revalidate = useRevalidate();

  async function save(body) {
    const saved = await update(mailbox.id, body);
    await mutate(saved, { revalidate: false });
    const note = savedNote("Saved", saved);
    notify(note.message, note.options);
  }
  async function runNow() {
    try {
      const reply = await runMailbox(mailbox.id);
      notify(reply.detail || "The mailbox is being checked now.", {
        type: "info",
      });
      await revalidate(`mailboxes/${mailbox.id}/`);
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }
  async function destroy() {
    const sure = await confirm({
      title: "Delete the mailbox",
      message: `Delete ${mailbox.name}? Its mail is no longer fetched. Files already saved stay.`,
    });
    if (!sure) return;
    try {
      await remove(mailbox.id);
      notify(`Deleted ${mailbox.name}`, { type: "positive" });
      navigate("/admin/mailboxes");
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }

  if (error) {
    return (
      <>
        <PageHeader title="Mailbox" back={["/admin/mailboxes", "Mailboxes"]} />
        <p className="error" role="alert">
          {errorText(error)}
        </p>
      </>
    );
  }
  if (!mailbox) return <p>Loading…</p>;
  const last = mailbox.last_run;
  return (
    <>
      <PageHeader title={mailbox.name} back={["/admin/mailboxes", "Mailboxes"]}>
        <button className="secondary" onClick={runNow}>
          Run now
        </button>
        <Link
          className="button secondary"
          to={`/admin/mailboxes/${mailbox.id}/runs`}
        >
          Runs
        </Link>
        <button className="danger" onClick={destroy}>
          Delete
        </button>
      </PageHeader>
      <p className="meta">
        {last
          ? `Last run ${formatTime(last.started_at)}: ${last.status}${last.error ? ` (${last.error})` : ""}`
          : "Not run yet"}
      </p>
      <MailboxForm
        key={mailbox.id}
        mailbox={mailbox}
        onSubmit={save}
        submitLabel="Save"
      />
    </>
  );
}
