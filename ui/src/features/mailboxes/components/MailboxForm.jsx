import {
  CheckboxField,
  FormErrors,
  SelectField,
  TextField,
  useForm,
} from "../../../components/forms.jsx";
import { useSourceOptions } from "../api/getSourceOptions.js";

const SECURITY = [
  ["tls", "TLS (IMAPS, port 993)"],
  ["starttls", "STARTTLS (port 143)"],
  ["none", "None (plain text)"],
];
const KEEP = [
  ["attachments", "The attachments"],
  ["message", "The whole message (.eml)"],
];
const AFTER = [
  ["seen", "Mark it as read"],
  ["move", "Move it to a folder"],
  ["delete", "Delete it"],
];
const DEFAULT_PORTS = { tls: 993, starttls: 143, none: 143 };

export function mailboxValues(mailbox) {
  const m = mailbox || {};
  return {
    name: m.name || "",
    host: m.host || "",
    port: m.port ?? 993,
    security: m.security || "tls",
    verify_tls: m.verify_tls !== false,
    username: m.username || "",
    password: "",
    folder: m.folder || "INBOX",
    source: m.source === null || m.source === undefined ? "" : String(m.source),
    target_folder: m.target_folder || "/mail/{date}",
    keep: m.keep || "attachments",
    after: m.after || "seen",
    move_to: m.move_to || "",
    interval_minutes: m.interval_minutes ?? 5,
    enabled: m.enabled !== false,
  };
}

export function mailboxBody(values) {
  const body = {
    ...values,
    port: Number(values.port),
    interval_minutes: Number(values.interval_minutes),
    name: values.name.trim(),
    host: values.host.trim(),
  };
  if (values.source === "") delete body.source;
  else body.source = Number(values.source);
  if (!values.password) delete body.password; // write-only: empty keeps the stored one
  return body;
}

export function MailboxForm({ mailbox, onSubmit, submitLabel }) {
  const form = useForm(mailboxValues(mailbox));
  const { data: sources } = useSourceOptions();
  const sourceChoices = [
    ...(mailbox ? [] : [["", "My own source"]]),
    ...(sources || []).map((s) => [String(s.id), s.name]),
  ];
  const setSecurity = (security) => {
    const port = Number(form.values.port);
    form.setValues((all) => ({
      ...all,
      security,
      port: Object.values(DEFAULT_PORTS).includes(port)
        ? DEFAULT_PORTS[security]
        : all.port,
    }));
  };
  return (
    <form
      className="card form-grid"
      onSubmit={form.submit((values) => onSubmit(mailboxBody(values)))}
    >
      <section>
        <h2>Mail server</h2>
        <TextField form={form} name="name" label="Name" required />
        <TextField form={form} name="host" label="IMAP host" required />
        <SelectField
          form={form}
          name="security"
          label="Security"
          options={SECURITY}
          onChange={(e) => setSecurity(e.target.value)}
        />
        <TextField
          form={form}
          name="port"
          label="Port"
          type="number"
          min="1"
          max="65535"
        />
        <CheckboxField
          form={form}
          name="verify_tls"
          label="Verify the server's certificate"
        />
        <TextField
          form={form}
          name="username"
          label="Username"
          required
          autoComplete="off"
        />
        <TextField
          form={form}
          name="password"
          label="Password"
          type="password"
          autoComplete="new-password"
          help={
            mailbox && mailbox.has_password
              ? "Leave empty to keep the stored password."
              : undefined
          }
        />
        <TextField form={form} name="folder" label="Folder" />
      </section>
      <section>
        <h2>What to do with new mail</h2>
        <SelectField
          form={form}
          name="source"
          label="Save into the source"
          options={sourceChoices}
        />
        <TextField
          form={form}
          name="target_folder"
          label="Save into the folder"
          help="{date}, {from}, {subject} and {message_id} are filled in per message."
        />
        <SelectField form={form} name="keep" label="Keep" options={KEEP} />
        <SelectField
          form={form}
          name="after"
          label="Afterwards"
          options={AFTER}
        />
        {form.values.after === "move" ? (
          <TextField
            form={form}
            name="move_to"
            label="Move to the mail folder"
            required
          />
        ) : null}
        <TextField
          form={form}
          name="interval_minutes"
          label="Check every (minutes)"
          type="number"
          min="1"
          max="1440"
        />
        <CheckboxField
          form={form}
          name="enabled"
          label="Enabled (checked on the interval)"
        />
        <FormErrors form={form} />
        <div className="actions">
          <button type="submit" disabled={form.busy}>
            {submitLabel}
          </button>
        </div>
      </section>
    </form>
  );
}
