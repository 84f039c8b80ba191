import { Dialog } from "../../../components/Dialog.jsx";
import { FormErrors, TextField, useForm } from "../../../components/forms.jsx";
import { useNotify } from "../../../components/notifications.jsx";
import { useCreateOrganisation } from "../api/createOrganisation.js";

/** A new organisation on trial, with its default source and first admin. */
export function CreateOrganisationDialog({ onClose }) {
  const notify = useNotify();
  const create = useCreateOrganisation();
  const form = useForm({
    name: "",
    subdomain: "",
    username: "",
    email: "",
    password: "",
  });
  const save = form.submit(async (values) => {
    const created = await create({
      name: values.name.trim(),
      subdomain: values.subdomain.trim() || null,
      admin: {
        username: values.username.trim(),
        email: values.email.trim(),
        password: values.password || null,
      },
    });
    notify(`Created ${created.name}`, { type: "positive" });
    onClose();
  });
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
          help="Empty: the admin is invited by mail."
        />
        <FormErrors form={form} />
      </form>
    </Dialog>
  );
}
