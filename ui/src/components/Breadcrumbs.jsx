import { crumbs } from "../lib/paths.js";

/** Where a file list is: each folder up to `path` opens by `onOpen(path)`; the
 * first is named `root`, the last is the current one. */
export function Breadcrumbs({ path, root, onOpen }) {
  return (
    <nav className="breadcrumbs" aria-label="Folder">
      {crumbs(path, root).map(([label, target], i, all) => (
        <span key={target}>
          {i ? <span aria-hidden="true"> / </span> : null}
          {i === all.length - 1 ? (
            <span aria-current="page">{label}</span>
          ) : (
            <button className="link" onClick={() => onOpen(target)}>
              {label}
            </button>
          )}
        </span>
      ))}
    </nav>
  );
}
