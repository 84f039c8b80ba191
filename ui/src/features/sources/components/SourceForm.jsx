import {
  CheckboxField,
  FormErrors,
  SelectField,
  TextField,
  TextareaField,
  useForm,
} from "../../../components/forms.jsx";

export const TYPES = [
  ["local", "Local folder"],
  ["s3", "S3-compatible storage"],
  ["sftp", "SFTP server"],
];

// The config fields of each type (DESIGN §5); secrets are write-only: empty keeps the stored one.
export const CONFIG_FIELDS = {
  local: [
    [
      "path",
      "Folder",
      {
        required: true,
        help: "Inside the organisation's folder, or a folder the operator allowed.",
      },
    ],
  ],
  s3: [
    ["endpoint", "Endpoint URL", { placeholder: "https://s3.example.com" }],
    ["region", "Region"],
    ["bucket", "Bucket", { required: true }],
    ["prefix", "Prefix"],
    ["access_key", "Access key"],
    ["secret_key", "Secret key", { type: "password", secret: true }],
    ["path_style", "Path-style addressing", { checkbox: true }],
    ["verify_tls", "Verify the server's certificate", { checkbox: true }],
  ],
  sftp: [
    ["host", "Host", { required: true }],
    ["port", "Port", { type: "number", placeholder: "22" }],
    ["username", "Username"],
    ["password", "Password", { type: "password", secret: true }],
    ["private_key", "Private key", { textarea: true, secret: true }],
    [
      "host_key_fingerprint",
      "Host key fingerprint",
      { help: "Empty: pinned on the first connection." },
    ],
    ["path", "Folder"],
  ],
};

export function sourceValues(source) {
  const s = source || {};
  const config = s.config || {};
  const values = {
    name: s.name || "",
    type: s.type || "local",
    read_only: Boolean(s.read_only),
  };
  for (const fields of Object.values(CONFIG_FIELDS)) {
    for (const [name, , options = {}] of fields) {
      const key = `config_${name}`;
      if (key in values) continue;
      values[key] = options.checkbox
        ? (config[name] ?? name === "verify_tls")
        : options.secret
          ? ""
          : (config[name] ?? "");
    }
  }
  return values;
}

/** {name, type, read_only, config} from the form (secrets only when typed). */
export function sourceBody(values) {
  const config = {};
  for (const [name, , options = {}] of CONFIG_FIELDS[values.type] || []) {
    const value = values[`config_${name}`];
    if (options.secret && !value) continue;
    if (options.checkbox) config[name] = Boolean(value);
    else if (options.type === "number")
      config[name] = value === "" ? null : Number(value);
    else config[name] = typeof value === "string" ? value.trim() : value;
  }
  return {
    name: values.name.trim(),
    type: values.type,
    read_only: values.read_only,
    config,
  };
}

export function SourceForm({ source, onSubmit, submitLabel }) {
  const form = useForm(sourceValues(source));
  const fields = CONFIG_FIELDS[form.values.type] || [];
  const configErrors = form.errors.config;
  return (
    <form
      className="card narrow-form"
      onSubmit={form.submit((values) => onSubmit(sourceBody(values)))}
    >
      <TextField form={form} name="name" label="Name" required />
      <SelectField
        form={form}
        name="type"
        label="Type"
        options={TYPES}
        disabled={Boolean(source)}
      />
      {fields.map(([name, label, options = {}]) => {
        const key = `config_${name}`;
        const help =
          options.secret && source
            ? "Leave empty to keep the stored one."
            : options.help;
        if (options.checkbox)
          return (
            <CheckboxField key={key} form={form} name={key} label={label} />
          );
        if (options.textarea)
          return (
            <TextareaField
              key={key}
              form={form}
              name={key}
              label={label}
              help={help}
              className="mono"
            />
          );
        return (
          <TextField
            key={key}
            form={form}
            name={key}
            label={label}
            type={options.type || "text"}
            placeholder={options.placeholder}
            required={options.required && !(options.secret && source)}
            help={help}
          />
        );
      })}
      {configErrors ? (
        <p className="field-error" role="alert">
          {configErrors.join(" ")}
        </p>
      ) : null}
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
