import { FileIcon, FolderIcon } from "../../../components/icons.jsx";
import { formatBytes, formatTime } from "../../../lib/format.js";

function SortHeader({ label, name, sort, onSort }) {
  const active = sort.key === name;
  return (
    <th
      scope="col"
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

/** The folder's entries: name (folders open), size, modified, and the actions of each. */
export function FileTable({
  entries,
  sort,
  onSort,
  onOpen,
  onDownload,
  onRename,
  onDelete,
  onShare,
  loading,
  refused = {},
}) {
  return (
    <div className="table-wrap">
      <table className="files">
        <thead>
          <tr>
            <SortHeader label="Name" name="name" sort={sort} onSort={onSort} />
            <SortHeader label="Size" name="size" sort={sort} onSort={onSort} />
            <SortHeader
              label="Modified"
              name="modified"
              sort={sort}
              onSort={onSort}
            />
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {loading ? (
            <tr>
              <td colSpan={4}>Loading…</td>
            </tr>
          ) : entries.length === 0 ? (
            <tr>
              <td colSpan={4}>This folder is empty.</td>
            </tr>
          ) : (
            entries.map((entry) => (
              <tr key={entry.name}>
                <td className="name">
                  {entry.type === "dir" ? (
                    <button className="link" onClick={() => onOpen(entry)}>
                      <FolderIcon />
                      {entry.name}
                    </button>
                  ) : (
                    <span>
                      <FileIcon />
                      {entry.name}
                    </span>
                  )}
                </td>
                <td>{entry.type === "dir" ? "" : formatBytes(entry.size)}</td>
                <td>{formatTime(entry.modified)}</td>
                <td className="row-actions">
                  {entry.type !== "dir" ? (
                    <button
                      className="flat small"
                      onClick={() => onDownload(entry)}
                      aria-label={`Download ${entry.name}`}
                      disabled={Boolean(refused.download)}
                      title={refused.download || undefined}
                    >
                      Download
                    </button>
                  ) : null}
                  <button
                    className="flat small"
                    onClick={() => onShare(entry)}
                    aria-label={`Share ${entry.name}`}
                    disabled={Boolean(refused.share)}
                    title={refused.share || undefined}
                  >
                    Share
                  </button>
                  <button
                    className="flat small"
                    onClick={() => onRename(entry)}
                    aria-label={`Rename ${entry.name}`}
                    disabled={Boolean(refused.rename)}
                    title={refused.rename || undefined}
                  >
                    Rename
                  </button>
                  <button
                    className="flat small danger-text"
                    onClick={() => onDelete(entry)}
                    aria-label={`Delete ${entry.name}`}
                    disabled={Boolean(refused.delete)}
                    title={refused.delete || undefined}
                  >
                    Delete
                  </button>
                </td>
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}
