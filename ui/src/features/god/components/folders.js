import { formatTime } from "../../../lib/format.js";

/** A row's key in the listing: one path may be listed for several organisations and reservations. */
export function folderRowId(row) {
  const use = row.source
    ? `source ${row.source.id}`
    : row.reserved
      ? `reserved ${row.reserved.id}`
      : "own";
  return `${row.organisation.id} ${use} ${row.path}`;
}

/** What a folder is now: a source's, kept after its source was deleted, or its organisation's own. */
export function folderUse(row) {
  if (row.source) return `Source ${row.source.name}`;
  if (row.reserved)
    return `Reserved since ${formatTime(row.reserved.since)} (was ${row.reserved.source})`;
  return "The organisation's own folder";
}

const joined = (names) =>
  names.length > 1
    ? `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`
    : names[0];

/**
 * The warning of a folder other organisations' folders overlap (made before the rule or
 * by hand): they are named where `names` (id -> name, from the rows shown) knows them.
 */
export function sharedWarning(row, names = new Map()) {
  const others = row.shared_with || [];
  if (!others.length) return "";
  const who = others.map((id) => names.get(id) || `organisation ${id}`);
  return `Shared with ${joined(who)}: each can read the other's files`;
}
