import { useState } from "react";
import { useParams } from "react-router";
import { PageHeader, PagedTable } from "../../../components/lists.jsx";
import { errorText, useNotify } from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { formatBytes, formatTime } from "../../../lib/format.js";
import { useMailbox } from "../api/getMailbox.js";
import { useMailboxRuns } from "../api/getMailboxRuns.js";
import { runMailbox } from "../api/runMailbox.js";

const COLUMNS = [
  ["Started", (r) => formatTime(r.started_at)],
  ["Finished", (r) => formatTime(r.finished_at, "running")],
  ["Status", (r) => r.status],
  ["Messages", (r) => r.messages],
  ["Files", (r) => r.files],
  ["Size", (r) => formatBytes(r.bytes)],
  ["Error", (r) => r.error],
];

/** /admin/mailboxes/{pid}/runs: the history; refreshed while a run is going on. */
export function MailboxRuns() {
  const { pid } = useParams();
  const [page, setPage] = useState(1);
  const notify = useNotify();
  const { data: mailbox } = useMailbox(pid);
  const { data, error, isLoading, mutate } = useMailboxRuns(
    pid,
    { page },
    {
      refreshInterval: (latest) =>
        latest && latest.results.some((r) => !r.finished_at) ? 2000 : 0,
    },
  );
  usePageTitle(mailbox ? `Runs of ${mailbox.name}` : "Mailbox runs");

  async function runNow() {
    try {
      const reply = await runMailbox(pid);
      notify(reply.detail || "The mailbox is being checked now.", {
        type: "info",
      });
      await mutate();
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }
  return (
    <>
      <PageHeader
        title="Mailbox runs"
        back={[`/admin/mailboxes/${pid}`, mailbox ? mailbox.name : "Mailbox"]}
      >
        <button onClick={runNow}>Run now</button>
      </PageHeader>
      <PagedTable
        data={data}
        error={error}
        isLoading={isLoading}
        page={page}
        onPage={setPage}
        columns={COLUMNS}
        empty="No runs yet."
        caption="Mailbox runs"
      />
    </>
  );
}
