import { PagedTable } from "../lists.jsx";
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

/** A page of the audit log; `error` is the failed load's error, if any. */
export function LogTable({ data, error, page, onPage }) {
  return (
    <PagedTable
      data={data}
      error={error}
      page={page}
      onPage={onPage}
      columns={LOG_COLUMNS}
      empty="No log entries match."
      caption="Log entries"
    />
  );
}
