// The source types, their config fields (as the API declares them: SourceFields
// and LocalSettings in core/source_admin.py, S3Settings and SftpSettings in
// storage/<type>/config.py, published in the OpenAPI document; see
// docs/architecture.md) and the mapping between a source, the form's values,
// the request body and the server's field errors.

import declared from "./sourceConfig.json";

export const TYPES = [
  ["local", "Local folder"],
  ["s3", "S3-compatible bucket"],
  ["sftp", "Remote SFTP server"],
];

export const typeLabel = (type) =>
  (TYPES.find(([value]) => value === type) || [type, type || ""])[1];

// An S3 source signs in with access keys, or with OpenID Connect: an admin signs
// in with the provider in the browser, the appliance keeps its refresh token.
export const AUTH_CHOICES = [
  ["keys", "Access keys"],
  ["oauth2", "OpenID Connect sign-in"],
];
const KEYS = ["auth", "keys"];
const OIDC = ["auth", "oauth2"];

/** Where the provider sends the admin back: to register at the provider. */
export const redirectUri = (origin) => `${origin}/admin/sources/callback`;

/**
 * How the console shows each type's config fields: [name, label, options], in
 * the form's order. `secret` names the view's flag saying one is stored
 * (write-only: never shown, empty keeps it); `when: [field, value]` shows and
 * sends it only while that field of the type has that value. What a field is
 * comes from the API's declaration (see CONFIG_FIELDS).
 */
const SHOWN = {
  local: [
    [
      "path",
      "Folder",
      {
        required: true,
        help: "Relative to the organisation's folder (. for that folder itself), or an absolute folder the operator allowed.",
      },
    ],
  ],
  s3: [
    [
      "endpoint",
      "Endpoint URL",
      {
        placeholder: "https://s3.example.com:9000",
        help: "Empty: Amazon S3 in the region below.",
      },
    ],
    ["region", "Region", { placeholder: "us-east-1" }],
    ["bucket", "Bucket", { required: true }],
    ["prefix", "Prefix", { help: "Only keys under this prefix are used." }],
    [
      "auth",
      "Authentication",
      { select: AUTH_CHOICES, hint: /config\.auth\b/ },
    ],
    [
      "access_key",
      "Access key",
      { required: true, autoComplete: "off", when: KEYS },
    ],
    [
      "secret_key",
      "Secret key",
      {
        type: "password",
        secret: "has_secret_key",
        required: true,
        hint: /\bsecret key\b/i,
        when: KEYS,
      },
    ],
    [
      "authorize_url",
      "Authorize URL",
      {
        when: OIDC,
        required: true,
        placeholder: "https://login.example.com/oauth2/authorize",
      },
    ],
    [
      "token_url",
      "Token URL",
      {
        when: OIDC,
        required: true,
        placeholder: "https://login.example.com/oauth2/token",
      },
    ],
    [
      "client_id",
      "Client ID",
      { when: OIDC, required: true, autoComplete: "off" },
    ],
    [
      "client_secret",
      "Client secret",
      {
        when: OIDC,
        type: "password",
        secret: "has_client_secret",
        help: "Sent with HTTP Basic (client_secret_basic). Empty for a public client (PKCE only).",
      },
    ],
    [
      "scope",
      "Scope",
      {
        when: OIDC,
        placeholder: "openid",
        help: "The provider must give a refresh token: often openid offline_access.",
      },
    ],
    [
      "role_arn",
      "Role ARN",
      {
        when: OIDC,
        help: "The role STS lets the signed-in identity assume (optional for MinIO).",
      },
    ],
    [
      "sts_endpoint",
      "STS endpoint",
      {
        when: OIDC,
        placeholder: "https://sts.us-east-1.amazonaws.com",
        help: "Empty: the endpoint above (MinIO serves STS there), or AWS STS in the region.",
      },
    ],
    ["path_style", "Path-style addressing"],
    ["verify_tls", "Verify the server's TLS certificate"],
  ],
  sftp: [
    ["host", "Host", { required: true }],
    ["port", "Port"],
    ["username", "Username", { required: true, autoComplete: "off" }],
    [
      "password",
      "Password",
      {
        type: "password",
        secret: "has_password",
        forget: "Remove the saved password",
        hint: /\bpassword\b/i,
      },
    ],
    [
      "private_key",
      "Private key",
      {
        textarea: true,
        secret: "has_private_key",
        forget: "Remove the saved private key",
        hint: /private key/i,
        help: "OpenSSH or PEM format, without a passphrase. Give a password, a private key or both.",
      },
    ],
    [
      "path",
      "Remote folder",
      { help: "Empty: the remote user's login folder.", hint: /\bfolder\b/i },
    ],
    [
      "host_key_fingerprint",
      "Host key fingerprint",
      { pinned: true, hint: /fingerprint|host key/i },
    ],
  ],
};

/** A declared field's options: its group, its kind and bounds, its initial value. */
function declaredOptions(field, group) {
  const kinds = [].concat(field.type);
  const options = group ? { group } : {};
  if (kinds.includes("boolean")) options.checkbox = true;
  else if (kinds.includes("integer"))
    Object.assign(options, {
      type: "number",
      min: field.minimum,
      max: field.maximum,
    });
  if (field.default !== undefined && field.default !== null)
    options.initial = field.default;
  return options;
}

/** The declared config fields of `type`: [name, schema, group], a nested object's fields in its group. */
const declaredFields = (type) =>
  declared["x-source-types"][type].flatMap((name) => {
    const field = declared.properties[name];
    return field.properties
      ? Object.entries(field.properties).map(([inner, f]) => [inner, f, name])
      : [[name, field]];
  });

/**
 * Each type's config fields: [name, label, options], made from the API's
 * declaration of a source's config (sourceConfig.json, the OpenAPI document's:
 * each type's fields, their kind, bounds and defaults; `group` nests a field in
 * config[group]) and how the console shows them (SHOWN); a field declared and
 * not shown there comes last, under its own name.
 */
export const CONFIG_FIELDS = Object.fromEntries(
  Object.keys(declared["x-source-types"]).map((type) => {
    const shown = SHOWN[type] || [];
    const place = (name) => {
      const found = shown.findIndex(([shownName]) => shownName === name);
      return found < 0 ? shown.length : found;
    };
    const fields = declaredFields(type).sort(([a], [b]) => place(a) - place(b));
    return [
      type,
      fields.map(([name, field, group]) => {
        const [, label = name, options = {}] =
          shown.find(([shownName]) => shownName === name) || [];
        return [name, label, { ...declaredOptions(field, group), ...options }];
      }),
    ];
  }),
);

const fieldsOf = (type) => CONFIG_FIELDS[type] || [];

/** The form's key of a config field: one per type, so switching type loses nothing. */
export const fieldKey = (type, name) => `${type}_${name}`;

/** Whether a field of `type` is shown and sent with these values (see `when`). */
export const fieldActive = (values, type, options = {}) =>
  !options.when || values[fieldKey(type, options.when[0])] === options.when[1];

/** The part of a source's config view that holds a field (its `group`, or all of it). */
export const configPart = (config, options = {}) =>
  options.group ? (config && config[options.group]) || {} : config || {};

/** The form's initial values for a source (null: a new one). */
export function sourceValues(source) {
  const s = source || {};
  const config = s.config || {};
  const values = {
    name: s.name || "",
    type: s.type || "local",
    read_only: Boolean(s.read_only),
    replace_fingerprint: false,
  };
  for (const [type, fields] of Object.entries(CONFIG_FIELDS)) {
    const own = type === s.type ? config : {};
    for (const [name, , options = {}] of fields) {
      const stored = options.secret
        ? undefined
        : configPart(own, options)[name];
      values[fieldKey(type, name)] =
        stored ?? (options.initial === undefined ? "" : options.initial);
      if (options.forget) values[`${fieldKey(type, name)}_forget`] = false;
    }
  }
  return values;
}

/**
 * {name, type, read_only, config} from the form: secrets only when typed (or ""
 * to remove a stored one, when asked); the host
 * key fingerprint on create when given, on edit only when a new one is pasted.
 */
export function sourceBody(values, source = null) {
  const body = {};
  for (const [name, , options = {}] of fieldsOf(values.type)) {
    if (!fieldActive(values, values.type, options)) continue;
    const value = values[fieldKey(values.type, name)];
    const config = options.group
      ? (body[options.group] = body[options.group] || {})
      : body;
    if (
      options.forget &&
      !value &&
      values[`${fieldKey(values.type, name)}_forget`]
    )
      config[name] = ""; // the server drops the stored one
    if (options.secret && !value) continue;
    if (options.pinned) {
      const typed = String(value || "").trim();
      if (typed && (!source || values.replace_fingerprint))
        config[name] = typed;
      continue;
    }
    if (options.checkbox) config[name] = Boolean(value);
    else if (options.type === "number")
      config[name] = value === "" || value === null ? null : Number(value);
    else config[name] = typeof value === "string" ? value.trim() : value;
  }
  return {
    name: values.name.trim(),
    type: values.type,
    read_only: values.read_only,
    config: body,
  };
}

const FIELD_NAME = /\bconfig\.([a-z_]+)\b|\b([a-z]+(?:_[a-z]+)+)\b/g;

/**
 * The config field a message is about: the one it names (config.host, or
 * host_key_fingerprint), else the first whose hint it matches ("host key").
 */
function namedField(message, fields) {
  const names = fields.map(([name]) => name);
  for (const match of String(message).matchAll(FIELD_NAME)) {
    const name = match[1] || match[2];
    if (names.includes(name)) return name;
  }
  const hinted = fields.find(([, , o = {}]) => o.hint && o.hint.test(message));
  return hinted ? hinted[0] : null;
}

/**
 * A 400 reply's fields for the form of `type`: config errors under their field
 * (keys `config.host`, `{config: {host: [...]}}`, a top-level `host`, or a message
 * in `config` naming `config.host` or matching the field's hint); the rest of `config` stays under `config`
 * (a single-field type gets them all); `detail` is the first message.
 */
export function sourceFieldErrors(data, type) {
  const names = fieldsOf(type).map(([name]) => name);
  const out = {};
  const add = (key, messages) => {
    const list = (Array.isArray(messages) ? messages : [messages]).map(String);
    if (list.length) out[key] = [...(out[key] || []), ...list];
  };
  const addConfig = (name, messages) =>
    add(
      name && names.includes(name) ? fieldKey(type, name) : "config",
      messages,
    );
  for (const [key, value] of Object.entries(data || {})) {
    if (key === "detail") continue;
    if (
      key === "config" &&
      value &&
      !Array.isArray(value) &&
      typeof value === "object"
    ) {
      for (const [name, messages] of Object.entries(value))
        addConfig(name, messages);
    } else if (key === "config") {
      for (const message of Array.isArray(value) ? value : [value])
        addConfig(
          namedField(message, fieldsOf(type)) ||
            (names.length === 1 ? names[0] : null),
          message,
        );
    } else if (key.startsWith("config.")) {
      addConfig(key.slice(7), value);
    } else if (
      names.includes(key) &&
      !["name", "type", "read_only"].includes(key)
    ) {
      addConfig(key, value);
    } else {
      add(key, value);
    }
  }
  const first = Object.values(out).flat()[0];
  return {
    ...out,
    detail: first || (data && data.detail) || "Some fields are not valid.",
  };
}

/** Where a source's files are, in one line for the list. */
export function sourceLocation(source) {
  const c = (source && source.config) || {};
  if (source.type === "sftp") {
    const port = c.port && Number(c.port) !== 22 ? `:${c.port}` : "";
    const path = c.path ? (c.path.startsWith("/") ? c.path : `/${c.path}`) : "";
    return `${c.username ? `${c.username}@` : ""}${c.host || ""}${port}${path}`;
  }
  if (source.type === "s3")
    return `${c.bucket || ""}${c.prefix ? `/${c.prefix.replace(/^\/+/, "")}` : ""}`;
  // the server shows a local folder relative to the organisation's own folder
  if (c.path === ".") return "The organisation's folder";
  return c.path || "";
}
