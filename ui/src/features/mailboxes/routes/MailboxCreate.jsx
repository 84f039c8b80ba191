import { useNavigate } from "react-router";
import { PageHeader } from "../../../components/lists.jsx";
import { useNotify } from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { useCreateMailbox } from "../api/createMailbox.js";
import { MailboxForm } from "../components/MailboxForm.jsx";
import { savedNote } from "../components/savedNote.js";

export function MailboxCreate() {
  usePageTitle("Create a mailbox");
  const navigate = useNavigate();
  const notify = useNotify();
  const create = useCreateMailbox();
  async function submit(body) {
    const mailbox = await create(body);
    const note = savedNote("Created", mailbox);
    notify(note.message, note.options);
    navigate(`/admin/mailboxes/${mailbox.id}`);
  }
  return (
    <>
      <PageHeader
        title="Create a mailbox"
        back={["/admin/mailboxes", "Mailboxes"]}
      />
      <MailboxForm onSubmit={submit} submitLabel="Create" />
    </>
  );
}
