import { formatBytes } from "../../../lib/format.js";

const STATUS = {
  queued: "waiting",
  uploading: "",
  done: "done",
  failed: "failed",
  cancelled: "cancelled",
};

/** One row per file being uploaded, with its progress. */
export function UploadList({ uploads, onCancel, onDismiss }) {
  if (!uploads.length) return null;
  return (
    <ul className="uploads" aria-label="Uploads">
      {uploads.map((u) => (
        <li key={u.id} className={`upload ${u.status}`}>
          <span className="upload-name" title={u.name}>
            {u.name}
          </span>
          <span className="upload-size">{formatBytes(u.size)}</span>
          <progress
            value={u.progress}
            max={1}
            aria-label={`Uploading ${u.name}`}
          />
          <span className="upload-state">
            {u.status === "uploading"
              ? `${Math.round(u.progress * 100)}%`
              : STATUS[u.status]}
            {u.error && u.status === "failed" ? `: ${u.error}` : ""}
          </span>
          {u.status === "uploading" || u.status === "queued" ? (
            <button
              className="flat small"
              onClick={() => onCancel(u.id)}
              aria-label={`Cancel ${u.name}`}
            >
              Cancel
            </button>
          ) : u.status !== "done" ? (
            <button
              className="flat small"
              onClick={() => onDismiss(u.id)}
              aria-label={`Dismiss ${u.name}`}
            >
              ×
            </button>
          ) : null}
        </li>
      ))}
    </ul>
  );
}
