import { useState } from "react";
import { errorText } from "../../../components/notifications.jsx";
import { formatBytes } from "../../../lib/format.js";
import { uploadToSharedLink } from "../api/uploadToSharedLink.js";

/** An upload-only link: drop or choose files; each shows its progress and the name it got. */
export function DropBox({ token, access }) {
  const [rows, setRows] = useState([]);
  const [over, setOver] = useState(false);
  const patch = (id, changes) =>
    setRows((all) => all.map((r) => (r.id === id ? { ...r, ...changes } : r)));
  async function send(files) {
    for (const file of files) {
      const id = `${file.name}-${Math.random()}`;
      setRows((all) => [
        ...all,
        {
          id,
          name: file.name,
          size: file.size,
          progress: 0,
          state: "uploading",
        },
      ]);
      try {
        const reply = await uploadToSharedLink(token, access, file, {
          onProgress: (progress) => patch(id, { progress }),
        });
        const saved =
          reply.files && reply.files[0] ? reply.files[0].name : file.name;
        patch(id, { progress: 1, state: "done", saved });
      } catch (e) {
        patch(id, { state: "failed", error: errorText(e) });
      }
    }
  }
  return (
    <>
      <div
        className={`dropzone big ${over ? "over" : ""}`}
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={(e) => {
          e.preventDefault();
          setOver(false);
          send([...e.dataTransfer.files]);
        }}
      >
        <p>Drop files here, or</p>
        <label className="button">
          Choose files
          <input
            type="file"
            multiple
            className="visually-hidden"
            aria-label="Choose files to upload"
            onChange={(e) => {
              send([...e.target.files]);
              e.target.value = "";
            }}
          />
        </label>
      </div>
      {rows.length ? (
        <ul className="uploads" aria-label="Uploads">
          {rows.map((r) => (
            <li key={r.id} className={`upload ${r.state}`}>
              <span className="upload-name">{r.name}</span>
              <span className="upload-size">{formatBytes(r.size)}</span>
              <progress
                value={r.progress}
                max={1}
                aria-label={`Uploading ${r.name}`}
              />
              <span className="upload-state">
                {r.state === "done"
                  ? r.saved !== r.name
                    ? `uploaded as ${r.saved}`
                    : "uploaded"
                  : r.state === "failed"
                    ? r.error
                    : `${Math.round(r.progress * 100)}%`}
              </span>
            </li>
          ))}
        </ul>
      ) : null}
      <p className="help">
        Files you upload cannot be seen or replaced by other visitors of this
        link.
      </p>
    </>
  );
}
