import { DataTable, Pager } from "../lists.jsx";
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

export function LogTable({ data, error, page, onPage }) {
  return (
    <>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      <DataTable
        columns={LOG_COLUMNS}
        rows={data ? data.results : []}
        loading={!data && !error}
        empty="No log entries match."
        caption="Log entries"
      />
      <Pager data={data} page={page} onPage={onPage} />
    </>
  );
}
