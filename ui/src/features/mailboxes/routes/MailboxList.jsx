import { Link } from "react-router";
import { ResourceListPage, yesNo } from "../../../components/lists.jsx";
import { formatTime } from "../../../lib/format.js";
import { useMailboxes } from "../api/getMailboxes.js";

const COLUMNS = [
  ["Name", (m) => m.name],
  ["Host", (m) => `${m.host}:${m.port}`],
  ["Folder", (m) => m.folder],
  ["Enabled", (m) => yesNo(m.enabled)],
  [
    "Last run",
    (m) =>
      m.last_run
        ? `${m.last_run.status}, ${formatTime(m.last_run.started_at)}`
        : "never",
  ],
  ["History", (m) => <Link to={`/admin/mailboxes/${m.id}/runs`}>Runs</Link>],
];

export function MailboxList() {
  return (
    <ResourceListPage
      title="Mailboxes"
      createTo="/admin/mailboxes/create"
      help="A mailbox saves the mail of an IMAP folder (or its attachments) as files."
      useList={useMailboxes}
      columns={COLUMNS}
      rowLink={(m) => `/admin/mailboxes/${m.id}`}
    />
  );
}
