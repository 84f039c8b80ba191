import { formatBytes, formatTime } from "../lib/format.js";
import { FileIcon, FolderIcon } from "./icons.jsx";
import { MessageRow } from "./lists.jsx";
import { LoadError } from "./notifications.jsx";

/** A column header that sorts by `name`; plain text when the table does not sort. */
function ColumnHeader({ label, name, sort, onSort, className }) {
  if (!sort || !onSort)
    return (
      <th scope="col" className={className}>
        {label}
      </th>
    );
  const active = sort.key === name;
  return (
    <th
      scope="col"
      className={className}
      aria-sort={active ? (sort.up ? "ascending" : "descending") : "none"}
    >
      <button
        className="sort"
        onClick={() => onSort({ key: name, up: active ? !sort.up : true })}
      >
        {label}{" "}
        <span aria-hidden="true">{active ? (sort.up ? "▲" : "▼") : ""}</span>
      </button>
    </th>
  );
}

/** A file's name, or a folder's as a button that opens it: one line, cut with an
 * ellipsis when it does not fit; the full name is its text (read by screen readers)
 * and its tooltip. */
function EntryName({ entry, onOpen }) {
  if (entry.type === "dir")
    return (
      <button
        className="link entry-name"
        title={entry.name}
        onClick={() => onOpen(entry)}
      >
        <FolderIcon />
        <span className="ellipsis">{entry.name}</span>
      </button>
    );
  return (
    <span className="entry-name" title={entry.name}>
      <FileIcon />
      <span className="ellipsis">{entry.name}</span>
    </span>
  );
}

/**
 * A folder's entries, wherever files are listed (the file viewer, a shared
 * folder): name (folders open with `onOpen`), size, modified, and what
 * `actions(entry)` offers on each row (its column named `actionsLabel` for screen
 * readers). With `sort` and `onSort` the headers sort. `entries` is null until
 * loaded; a failed load's `error` is said above (the table left out when nothing
 * was loaded).
 */
export function FileTable({
  entries,
  onOpen,
  actions,
  actionsLabel = "Actions",
  sort,
  onSort,
  error,
  empty = "This folder is empty.",
}) {
  return (
    <>
      <LoadError error={error} />
      {error && !entries ? null : (
        <div className="table-wrap">
          <table className="files">
            <thead>
              <tr>
                <ColumnHeader
                  label="Name"
                  name="name"
                  sort={sort}
                  onSort={onSort}
                />
                <ColumnHeader
                  label="Size"
                  name="size"
                  sort={sort}
                  onSort={onSort}
                  className="size"
                />
                <ColumnHeader
                  label="Modified"
                  name="modified"
                  sort={sort}
                  onSort={onSort}
                  className="modified"
                />
                <th scope="col" className="actions-cell">
                  <span className="visually-hidden">{actionsLabel}</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {!entries || entries.length === 0 ? (
                <MessageRow span={4}>{entries ? empty : "Loading…"}</MessageRow>
              ) : (
                entries.map((entry) => (
                  <tr key={entry.name}>
                    <td className="name">
                      <EntryName entry={entry} onOpen={onOpen} />
                      <span className="entry-meta">
                        {entry.type === "dir"
                          ? "Folder"
                          : formatBytes(entry.size)}
                        {entry.modified
                          ? ` · ${formatTime(entry.modified)}`
                          : ""}
                      </span>
                    </td>
                    <td className="size">
                      {entry.type === "dir" ? "" : formatBytes(entry.size)}
                    </td>
                    <td className="modified">{formatTime(entry.modified)}</td>
                    <td className="actions-cell">
                      {actions ? actions(entry) : null}
                    </td>
                  </tr>
                ))
              )}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
