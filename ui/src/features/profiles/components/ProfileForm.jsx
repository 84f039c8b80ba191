import {
  CheckboxField,
  CheckboxGroup,
  FormErrors,
  SelectField,
  TextField,
  TextareaField,
  lines,
  useForm,
  wholeOrNull,
} from "../../../components/forms.jsx";
import {
  formatBytes,
  fromLocalInput,
  toLocalInput,
} from "../../../lib/format.js";
import { SIGN_IN_PASSWORD_HELP } from "../../../lib/passwords.js";
import { useSourceOptions } from "../api/getSourceOptions.js";

export const PERMISSIONS = [
  "list",
  "download",
  "upload",
  "overwrite",
  "delete",
  "rename",
  "mkdir",
];
export const PROTOCOLS = [
  ["sftp", "SFTP"],
  ["ftp", "FTP"],
  ["web", "Web"],
];

/** Form values from a profile (or the defaults of a new one). */
export function profileValues(profile) {
  const p = profile || {};
  return {
    username: p.username || "",
    email: p.email || "",
    password: "",
    is_admin: Boolean(p.is_admin),
    active: p.active !== false,
    source: p.source === null || p.source === undefined ? "" : String(p.source),
    home: p.home || "",
    permissions: p.permissions || [...PERMISSIONS],
    protocols: p.protocols || PROTOCOLS.map(([value]) => value),
    ssh_keys: (p.ssh_keys || []).join("\n"),
    ip_allow: (p.ip_allow || []).join("\n"),
    quota_bytes: p.quota_bytes ?? "",
    quota_files: p.quota_files ?? "",
    expires_at: toLocalInput(p.expires_at),
  };
}

/** The API body from form values: lists from lines, numbers, ISO times, no empty password. */
export function profileBody(values, creating) {
  const body = {
    username: values.username.trim(),
    email: values.email.trim(),
    is_admin: values.is_admin,
    active: values.active,
    source: values.source === "" ? null : Number(values.source),
    permissions: values.permissions,
    protocols: values.protocols,
    ssh_keys: lines(values.ssh_keys),
    ip_allow: lines(values.ip_allow),
    quota_bytes: wholeOrNull(values.quota_bytes),
    quota_files: wholeOrNull(values.quota_files),
    expires_at: fromLocalInput(values.expires_at),
  };
  if (values.home.trim() || !creating) body.home = values.home.trim() || "/";
  if (values.password) body.password = values.password;
  if (creating && body.source === null) delete body.source; // the organisation's default source
  return body;
}

export function ProfileForm({ profile, onSubmit, submitLabel }) {
  const creating = !profile;
  const form = useForm(profileValues(profile));
  const { data: sources } = useSourceOptions();
  const sourceChoices = [
    ["", creating ? "The organisation's default source" : "No source"],
    ...(sources || []).map((s) => [String(s.id), s.name]),
  ];
  const quota = wholeOrNull(form.values.quota_bytes);
  return (
    <form
      className="card form-grid"
      onSubmit={form.submit((values) =>
        onSubmit(profileBody(values, creating)),
      )}
    >
      <section>
        <h2>Account</h2>
        <TextField
          form={form}
          name="username"
          label="Username"
          required
          autoComplete="off"
        />
        <TextField
          form={form}
          name="email"
          label="Email"
          type="email"
          required
        />
        <TextField
          form={form}
          name="password"
          label={creating ? "Password" : "New password"}
          type="password"
          autoComplete="new-password"
          help={`${SIGN_IN_PASSWORD_HELP} ${
            creating
              ? "Leave empty to send an invitation: the person chooses a password from the mail."
              : "Leave empty to keep the current password."
          }`}
        />
        <CheckboxField form={form} name="is_admin" label="Administrator" />
        <CheckboxField form={form} name="active" label="Active (may sign in)" />
        <TextField
          form={form}
          name="expires_at"
          label="Expires"
          type="datetime-local"
          help="Empty: never."
        />
      </section>
      <section>
        <h2>Files</h2>
        <SelectField
          form={form}
          name="source"
          label="Source"
          options={sourceChoices}
        />
        <TextField
          form={form}
          name="home"
          label="Home folder"
          placeholder={
            creating ? `/${form.values.username || "username"}` : "/"
          }
          help="The folder inside the source this profile sees as its root."
        />
        <CheckboxGroup
          form={form}
          name="permissions"
          label="Permissions"
          options={PERMISSIONS}
        />
        <CheckboxGroup
          form={form}
          name="protocols"
          label="Protocols"
          options={PROTOCOLS}
        />
        <TextField
          form={form}
          name="quota_bytes"
          label="Quota in bytes"
          type="number"
          min="0"
          help={quota ? `${formatBytes(quota)}` : "Empty: no limit."}
        />
        <TextField
          form={form}
          name="quota_files"
          label="Quota in files"
          type="number"
          min="0"
          help="Empty: no limit."
        />
      </section>
      <section className="span-2">
        <h2>Access</h2>
        <TextareaField
          form={form}
          name="ssh_keys"
          label="SSH public keys"
          help="One OpenSSH public key a line (ssh-ed25519 AAAA… name)."
          className="mono"
        />
        <TextareaField
          form={form}
          name="ip_allow"
          label="Allowed addresses"
          rows={3}
          help="One address or network a line (203.0.113.0/24). Empty: from anywhere."
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
