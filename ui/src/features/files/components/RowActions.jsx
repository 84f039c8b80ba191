import { MenuButton } from "../../../components/MenuButton.jsx";

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
function Actions({ entry, actions, refused }) {
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

/** A file viewer row's actions: Download (files), Share, Rename, Delete, each
 * disabled with the reason as its tooltip where `refused` says so. */
export function RowActions({
  entry,
  refused = {},
  onDownload,
  onShare,
  onRename,
  onDelete,
}) {
  return (
    <Actions
      entry={entry}
      actions={actionsOf(entry, { onDownload, onShare, onRename, onDelete })}
      refused={refused}
    />
  );
}
