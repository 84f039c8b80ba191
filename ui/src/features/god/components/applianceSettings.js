/**
 * The appliance's settings the operator keeps in the console (god/settings/):
 * the public host name and outbound mail. Form values are keyed by the field
 * names the server's errors use ("smtp.host").
 */

export const MAIL_KEYS = [
  "host",
  "port",
  "starttls",
  "sender",
  "username",
  "password",
];

// where each warning leads: the section of /admin/god that sets it
export const SETTING_SECTIONS = {
  "server.public_hostname": {
    anchor: "public-host-name",
    link: "Set the public host name",
  },
  "smtp.host": { anchor: "outbound-mail", link: "Set up outbound mail" },
};

/** Why a setting cannot be changed here (the config sets it), or null. */
export function lockedText(item) {
  if (!item || item.editable) return null;
  return item.set_by
    ? `Set in the config file (${item.set_by}): change it there.`
    : "Set in the config file: change it there.";
}

/** Where a setting's value comes from, in words. */
export function sourceText(item) {
  if (!item) return "";
  if (item.source === "config") return "from the config file";
  if (item.source === "console") return "set here";
  return "the default";
}

/** The mail form's values: each setting's value; the password always empty (never told). */
export function mailValues(settings) {
  const values = {};
  for (const key of MAIL_KEYS) {
    const item = settings.smtp[key];
    values[`smtp.${key}`] =
      key === "password"
        ? ""
        : key === "port"
          ? String(item.value)
          : item.value;
  }
  return values;
}

/**
 * The PATCH body of the mail form: every field the config does not set (saving
 * confirms even an unchanged value), the port as a number when it is one (else as
 * typed, for the server to name the field), the password only when one was typed.
 */
export function mailChanges(values, settings) {
  const smtp = {};
  for (const key of MAIL_KEYS) {
    if (!settings.smtp[key].editable) continue;
    const value = values[`smtp.${key}`];
    if (key === "password") {
      if (value) smtp.password = value;
    } else if (key === "port") {
      const text = String(value ?? "").trim();
      smtp.port = /^\d+$/.test(text) ? Number(text) : text;
    } else if (key === "starttls") {
      smtp.starttls = Boolean(value);
    } else {
      smtp[key] = String(value ?? "").trim();
    }
  }
  return { smtp };
}

/** The PATCH body of the host name form: empty goes back to the default. */
export const hostChanges = (value) => ({
  server: { public_hostname: String(value ?? "").trim() || null },
});
