import { Dialog } from "../../../components/Dialog.jsx";
import {
  FormErrors,
  SelectField,
  TextField,
  useForm,
} from "../../../components/forms.jsx";
import { useNotify } from "../../../components/notifications.jsx";
import { fromLocalInput, toLocalInput } from "../../../lib/format.js";
import { useChangeOrganisation } from "../api/changeOrganisation.js";
import { STATUSES, statusChangeText } from "./statuses.js";

/** The operator changes an organisation's status and trial end. */
export function ChangeStatusDialog({ organisation, onClose }) {
  const notify = useNotify();
  const change = useChangeOrganisation();
  const initial = {
    status: organisation.status,
    trial_ends_at: toLocalInput(organisation.trial_ends_at),
  };
  const form = useForm(initial);
  const save = form.submit(async (values) => {
    // only what the operator changed: the field shows minutes, so sending an untouched
    // trial end back would move it by the seconds it had
    const body = {};
    if (values.status !== initial.status) body.status = values.status;
    if (values.trial_ends_at !== initial.trial_ends_at)
      body.trial_ends_at = fromLocalInput(values.trial_ends_at);
    const saved = await change(organisation.id, body);
    notify(statusChangeText(saved), {
      type: saved.trial_expired ? "warning" : "positive",
    });
    onClose();
  });
  return (
    <Dialog
      title={`Change ${organisation.name}`}
      onClose={onClose}
      actions={
        <>
          <button type="button" className="flat" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" form="change-organisation" disabled={form.busy}>
            Save
          </button>
        </>
      }
    >
      <form id="change-organisation" onSubmit={save}>
        <SelectField
          form={form}
          name="status"
          label="Status"
          options={STATUSES}
        />
        <TextField
          form={form}
          name="trial_ends_at"
          label="Trial ends"
          type="datetime-local"
          help="Payment missing pauses the organisation; deleted shuts it out."
        />
        <FormErrors form={form} />
      </form>
    </Dialog>
  );
}
