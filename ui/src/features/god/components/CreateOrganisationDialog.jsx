import { useState } from "react";
import { Dialog } from "../../../components/Dialog.jsx";
import { FormErrors, TextField, useForm } from "../../../components/forms.jsx";
import {
  InvitationLink,
  invitationNote,
} from "../../../components/InvitationLink.jsx";
import { useNotify } from "../../../components/notifications.jsx";
import { SIGN_IN_PASSWORD_HELP } from "../../../lib/passwords.js";
import { useCreateOrganisation } from "../api/createOrganisation.js";

/**
 * A new organisation on trial, with its default source and first admin. Without
 * the admin's password the admin is invited by mail; when the mail server did not
 * take it, the dialog becomes the invitation's link, for the operator to hand over.
 */
export function CreateOrganisationDialog({ onClose }) {
  const notify = useNotify();
  const create = useCreateOrganisation();
  const [unmailed, setUnmailed] = useState(null);
  const form = useForm({
    name: "",
    subdomain: "",
    username: "",
    email: "",
    password: "",
  });
  const save = form.submit(async (values) => {
    const { invitation, ...created } = await create({
      name: values.name.trim(),
      subdomain: values.subdomain.trim() || null,
      admin: {
        username: values.username.trim(),
        email: values.email.trim(),
        password: values.password || null,
      },
    });
    const note = invitationNote(created.name, invitation);
    notify(note.message, { type: note.type });
    if (invitation && !invitation.mailed) setUnmailed(invitation);
    else onClose();
  });
  if (unmailed)
    return (
      <InvitationLink
        invitation={unmailed}
        onClose={onClose}
        help="Outbound mail, below the list, says how mail is doing."
      />
    );
  return (
    <Dialog
      title="Create an organisation"
      onClose={onClose}
      actions={
        <>
          <button type="button" className="flat" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" form="create-organisation" disabled={form.busy}>
            Create
          </button>
        </>
      }
    >
      <form id="create-organisation" onSubmit={save}>
        <TextField form={form} name="name" label="Name" required />
        <TextField
          form={form}
          name="subdomain"
          label="Subdomain"
          help="Empty: made from the name."
        />
        <TextField
          form={form}
          name="username"
          label="First admin's username"
          required
        />
        <TextField
          form={form}
          name="email"
          label="First admin's email"
          type="email"
          required
        />
        <TextField
          form={form}
          name="password"
          label="First admin's password"
          type="password"
          autoComplete="new-password"
          help={`${SIGN_IN_PASSWORD_HELP} Empty: the admin is invited by mail.`}
        />
        <FormErrors form={form} />
      </form>
    </Dialog>
  );
}
