import { PagedTable } from "../lists.jsx";
import { RowActions } from "../RowActions.jsx";
import { formatBytes, formatTime } from "../../lib/format.js";

export const LOG_COLUMNS = [
  ["Time", (r) => formatTime(r.created_at)],
  ["User", (r) => r.username],
  ["Protocol", (r) => r.protocol],
  ["Action", (r) => r.action],
  ["Path", (r) => r.path],
  ["Size", (r) => (r.bytes ? formatBytes(r.bytes) : "")],
  ["Address", (r) => r.remote_address],
  ["Message", (r) => r.message],
];

// the filters an entry's actions narrow the log to, by the entry's own value
const NARROWING = {
  username: (user) => `Only entries of ${user}`,
  action: (action) => `Only ${action} entries`,
  protocol: (protocol) => `Only ${protocol} entries`,
};

/** An entry's actions: show only the entries of its user, action or protocol
 * (those it has, and that the log is not already narrowed to). */
export function logActions(entry, filters, onFilter) {
  return Object.entries(NARROWING)
    .filter(([name]) => entry[name] && (filters || {})[name] !== entry[name])
    .map(([name, label]) => ({
      label: label(entry[name]),
      onSelect: () => onFilter({ ...filters, [name]: entry[name] }),
    }));
}

/**
 * A page of the audit log; `error` is the failed load's error, if any. With
 * `onFilter(filters)`, each entry has an Actions menu that narrows `filters` to its
 * user, action or protocol.
 */
export function LogTable({ data, error, page, onPage, filters, onFilter }) {
  const columns = onFilter
    ? [
        ...LOG_COLUMNS,
        [
          "Actions",
          (r) => (
            <RowActions
              name={`log entry ${r.id}`}
              actions={logActions(r, filters, onFilter)}
              menuOnly
            />
          ),
          { actions: true },
        ],
      ]
    : LOG_COLUMNS;
  return (
    <PagedTable
      data={data}
      error={error}
      page={page}
      onPage={onPage}
      columns={columns}
      empty="No log entries match."
      caption="Log entries"
    />
  );
}
