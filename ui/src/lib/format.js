/** Bytes in decimal units, as file managers show them. */
export function formatBytes(bytes) {
  if (bytes === null || bytes === undefined || bytes === "") return "";
  if (bytes < 1000) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB", "PB"];
  let value = bytes;
  let unit = -1;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** A server time (ISO 8601) in the reader's locale, or `fallback`. */
export function formatTime(iso, fallback = "") {
  if (!iso) return fallback;
  const moment = new Date(iso);
  return Number.isNaN(moment.getTime()) ? String(iso) : moment.toLocaleString();
}

/** An ISO time as the value of an <input type="datetime-local"> (local time). */
export function toLocalInput(iso) {
  if (!iso) return "";
  const moment = new Date(iso);
  if (Number.isNaN(moment.getTime())) return "";
  const pad = (n) => String(n).padStart(2, "0");
  return `${moment.getFullYear()}-${pad(moment.getMonth() + 1)}-${pad(moment.getDate())}T${pad(moment.getHours())}:${pad(moment.getMinutes())}`;
}

/** The value of an <input type="datetime-local"> as ISO 8601 in UTC, or null when empty. */
export function fromLocalInput(value) {
  if (!value) return null;
  const moment = new Date(value);
  return Number.isNaN(moment.getTime())
    ? value
    : moment.toISOString().replace(/\.\d{3}Z$/, "Z");
}
