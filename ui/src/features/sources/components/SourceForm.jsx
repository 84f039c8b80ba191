import {
  CheckboxField,
  FormErrors,
  SelectField,
  TextField,
  TextareaField,
  useForm,
} from "../../../components/forms.jsx";
import { ApiError } from "../../../lib/api.js";
import {
  CONFIG_FIELDS,
  TYPES,
  configPart,
  fieldActive,
  fieldKey,
  redirectUri,
  sourceBody,
  sourceFieldErrors,
  sourceValues,
} from "./sourceTypes.js";

/** The pinned host key: typed on create (optional), read-only after unless replaced. */
function FingerprintField({ form, source, name, label }) {
  const pinned = (source && source.config.host_key_fingerprint) || "";
  const replacing = form.values.replace_fingerprint;
  const setReplacing = (on) =>
    form.setValues((all) => ({
      ...all,
      replace_fingerprint: on,
      [name]: on ? "" : pinned,
    }));
  if (!source)
    return (
      <TextField
        form={form}
        name={name}
        label={label}
        placeholder="SHA256:…"
        autoComplete="off"
        help="Optional: pinned on first connect. Paste it (ssh-keygen -lf) to check the server from the start."
      />
    );
  if (replacing)
    return (
      <>
        <TextField
          form={form}
          name={name}
          label={`New ${label.toLowerCase()}`}
          placeholder="SHA256:…"
          autoComplete="off"
          help="The fingerprint of the server's new key, as ssh-keygen -lf shows it. Check it with the server's administrator."
        />
        <button
          type="button"
          className="secondary"
          onClick={() => setReplacing(false)}
        >
          Keep the pinned key
        </button>
      </>
    );
  return (
    <>
      <TextField
        form={form}
        name={name}
        label={label}
        readOnly
        placeholder="Not pinned yet"
        help={
          pinned
            ? "Pinned on first connect. If the server's key changes, connections are refused until you paste the new fingerprint. A new host or port is pinned afresh when saved."
            : "Pinned on the next successful connection."
        }
      />
      <button
        type="button"
        className="secondary"
        onClick={() => setReplacing(true)}
      >
        Paste a new fingerprint
      </button>
    </>
  );
}

function ConfigField({ form, source, type, field }) {
  const [name, label, options = {}] = field;
  const key = fieldKey(type, name);
  if (options.pinned)
    return (
      <FingerprintField form={form} source={source} name={key} label={label} />
    );
  if (options.checkbox)
    return <CheckboxField form={form} name={key} label={label} />;
  if (options.select)
    return (
      <SelectField
        form={form}
        name={key}
        label={label}
        options={options.select}
      />
    );
  const saved =
    options.secret &&
    source &&
    source.type === type &&
    configPart(source.config, options)[options.secret];
  const help = saved ? "Saved — leave empty to keep." : options.help;
  const common = { form, name: key, label, help };
  const forget =
    saved && options.forget ? (
      <CheckboxField
        form={form}
        name={`${key}_forget`}
        label={options.forget}
      />
    ) : null;
  const control = options.textarea ? (
    <TextareaField
      {...common}
      className="mono"
      spellCheck={false}
      autoComplete="off"
    />
  ) : (
    <TextField
      {...common}
      type={options.type || "text"}
      placeholder={options.placeholder}
      required={Boolean(options.required && !saved)}
      min={options.min}
      max={options.max}
      autoComplete={
        options.secret ? "new-password" : options.autoComplete || undefined
      }
    />
  );
  return (
    <>
      {control}
      {forget}
    </>
  );
}

/** The create and edit form: the type's own fields, server errors under them. */
export function SourceForm({ source, onSubmit, submitLabel }) {
  const form = useForm(sourceValues(source));
  const type = form.values.type;
  const configErrors = form.errors.config;
  async function save(values) {
    try {
      await onSubmit(sourceBody(values, source));
    } catch (error) {
      if (error instanceof ApiError && error.status === 400)
        throw new ApiError(400, sourceFieldErrors(error.data, values.type));
      throw error;
    }
  }
  return (
    <form className="card narrow-form" onSubmit={form.submit(save)}>
      <TextField form={form} name="name" label="Name" required />
      <SelectField
        form={form}
        name="type"
        label="Type"
        options={TYPES}
        disabled={Boolean(source)}
        help={source ? "A source's type cannot change." : undefined}
      />
      {configErrors ? (
        <p className="field-error" role="alert">
          {configErrors.join(" ")}
        </p>
      ) : null}
      <div className="source-config" data-testid={`${type}-fields`}>
        {(CONFIG_FIELDS[type] || [])
          .filter((field) => fieldActive(form.values, type, field[2]))
          .map((field) => (
            <ConfigField
              key={fieldKey(type, field[0])}
              form={form}
              source={source}
              type={type}
              field={field}
            />
          ))}
        {type === "s3" && form.values.s3_auth === "oauth2" ? (
          <p className="help" data-testid="redirect-uri">
            Register this redirect URI at your provider:{" "}
            <code>{redirectUri(window.location.origin)}</code>. After saving,
            use “Sign in with the provider” on the source’s page: the appliance
            keeps the provider’s refresh token (encrypted, never shown) and
            trades it for temporary keys at the STS endpoint.
          </p>
        ) : null}
        {type === "s3" && !form.values.s3_verify_tls ? (
          <p className="help warning" role="note">
            Warning: without verifying the certificate, anyone between the
            appliance and the endpoint can read the keys and the files.
          </p>
        ) : null}
      </div>
      <CheckboxField
        form={form}
        name="read_only"
        label="Read-only (nobody can write through this source)"
      />
      <FormErrors form={{ ...form, known: [...form.known, "config"] }} />
      <div className="actions">
        <button type="submit" disabled={form.busy}>
          {submitLabel}
        </button>
      </div>
    </form>
  );
}
