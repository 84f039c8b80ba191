// What an API field is called on screen: a server error names the field
// ({"new_password1": ["..."]}); a person reads the field's label instead.

/** Fields whose messages speak for themselves: shown without a label. */
const UNLABELLED = new Set(["detail", "non_field_errors", "token", "uid"]);

/** Labels of the API's fields where the form that sent them did not say. */
export const FIELD_LABELS = {
  username: "Username",
  password: "Password",
  old_password: "Current password",
  new_password1: "New password",
  new_password2: "Repeat the password",
  email: "Email",
  to: "Email",
  name: "Name",
  subdomain: "Subdomain",
  organisation: "Organisation",
  is_admin: "Admin",
  active: "Active",
  source: "Source",
  home: "Home folder",
  permissions: "Permissions",
  protocols: "Protocols",
  ssh_keys: "SSH keys",
  ip_allow: "Allowed addresses",
  quota_bytes: "Quota (bytes)",
  quota_files: "Quota (files)",
  expires_at: "Expires",
  require_tls: "Require encryption",
  trial_ends_at: "Trial ends",
  status: "Status",
  branding: "Branding",
  branding_colour: "Branding colour",
  user_terms: "User terms",
  logo: "Logo",
  path: "Path",
  new_path: "New name",
  host: "Host",
  port: "Port",
  interval_minutes: "Interval (minutes)",
  target_folder: "Target folder",
  move_to: "Move to folder",
  max_downloads: "Download limit",
  recipients: "Recipients",
  scopes: "Scopes",
  page: "Page",
};

/** "quota_bytes" → "Quota bytes": a field no label is known for. */
const humane = (name) => {
  const words = name.replace(/_/g, " ").trim();
  return words ? words[0].toUpperCase() + words.slice(1) : name;
};

/**
 * The label of field `name` ("config.port" names a nested one): the form's own
 * label (`labels`), else the known one, else its name in words; null for the
 * fields whose messages need none (a link's token, detail).
 */
export function fieldLabel(name, labels = {}) {
  if (UNLABELLED.has(name)) return null;
  if (labels[name]) return labels[name];
  const last = name.split(".").pop();
  if (UNLABELLED.has(last)) return null;
  return (
    labels[last] || FIELD_LABELS[name] || FIELD_LABELS[last] || humane(last)
  );
}

/** One field's messages as a sentence a person reads: "New password: Too short." */
export function fieldMessage(name, messages, labels = {}) {
  const text = [].concat(messages).map(String).join(" ");
  const label = fieldLabel(name, labels);
  return label ? `${label}: ${text}` : text;
}
