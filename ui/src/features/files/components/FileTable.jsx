import { FileIcon, FolderIcon } from "../../../components/icons.jsx";
import { MenuButton } from "../../../components/MenuButton.jsx";
import { formatBytes, formatTime } from "../../../lib/format.js";

function SortHeader({ label, name, sort, onSort, className }) {
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

/** The actions a row offers: [label, refusal key, handler, extra class]. */
function actionsOf(entry, { onDownload, onShare, onRename, onDelete }) {
  return [
    entry.type !== "dir"
      ? ["Download", "download", () => onDownload(entry), ""]
      : null,
    ["Share", "share", () => onShare(entry), ""],
    ["Rename", "rename", () => onRename(entry), ""],
    ["Delete", "delete", () => onDelete(entry), "danger-text"],
  ].filter(Boolean);
}

/** A button per action on wide screens; one "Actions" menu on phones (CSS picks one). */
function RowActions({ entry, actions, refused }) {
  return (
    <>
      <div className="row-actions inline-actions">
        {actions.map(([label, key, run, extra]) => (
          <button
            key={key}
            className={`flat small ${extra}`}
            onClick={run}
            aria-label={`${label} ${entry.name}`}
            disabled={Boolean(refused[key])}
            title={refused[key] || undefined}
          >
            {label}
          </button>
        ))}
      </div>
      <MenuButton
        boxClassName="menu-actions"
        className="flat small"
        label="Actions"
        ariaLabel={`Actions for ${entry.name}`}
        floating
        items={(close) =>
          actions.map(([label, key, run, extra]) => (
            <button
              key={key}
              role="menuitem"
              tabIndex={-1}
              className={`flat ${extra}`}
              disabled={Boolean(refused[key])}
              title={refused[key] || undefined}
              onClick={() => {
                close(); // focus back on the Actions button: a dialog gives it back there
                run();
              }}
            >
              {label}
            </button>
          ))
        }
      />
    </>
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
            <SortHeader
              label="Size"
              name="size"
              sort={sort}
              onSort={onSort}
              className="size"
            />
            <SortHeader
              label="Modified"
              name="modified"
              sort={sort}
              onSort={onSort}
              className="modified"
            />
            <th scope="col" className="actions-cell">
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
                  <EntryName entry={entry} onOpen={onOpen} />
                  <span className="entry-meta">
                    {entry.type === "dir" ? "Folder" : formatBytes(entry.size)}
                    {entry.modified ? ` · ${formatTime(entry.modified)}` : ""}
                  </span>
                </td>
                <td className="size">
                  {entry.type === "dir" ? "" : formatBytes(entry.size)}
                </td>
                <td className="modified">{formatTime(entry.modified)}</td>
                <td className="actions-cell">
                  <RowActions
                    entry={entry}
                    actions={actionsOf(entry, {
                      onDownload,
                      onShare,
                      onRename,
                      onDelete,
                    })}
                    refused={refused}
                  />
                </td>
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}
