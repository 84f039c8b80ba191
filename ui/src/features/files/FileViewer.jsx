import { useEffect, useState } from "react";
import useSWR from "swr";
import { api } from "../../lib/api.js";
import { errorText, useNotify } from "../../components/notifications.jsx";
import { ConfirmDialog } from "../../components/dialog.jsx";

function join(folder, name) {
  return `${folder.replace(/\/$/, "")}/${name}`;
}

function size(bytes) {
  if (bytes < 1000) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = -1;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

export function FileViewer() {
  const notify = useNotify();
  const [path, setPath] = useState("/");
  const [sort, setSort] = useState({ key: "name", up: true });
  const [uploads, setUploads] = useState([]);
  const [over, setOver] = useState(false);
  const [deleting, setDeleting] = useState(null);
  const key = ["files/", { path }];
  const { data, error, mutate } = useSWR(key);
  useEffect(() => {
    document.title = "Files · File transfer portal";
  }, []);

  const entries = [...((data && data.entries) || [])].sort((a, b) => {
    if (a.type !== b.type) return a.type === "dir" ? -1 : 1;
    const order = sort.key === "name" ? a.name.localeCompare(b.name) : a[sort.key] < b[sort.key] ? -1 : a[sort.key] > b[sort.key] ? 1 : 0;
    return sort.up ? order : -order;
  });
  const crumbs = path.split("/").filter(Boolean);

  async function act(promise, done) {
    try {
      await promise;
      if (done) notify(done, { type: "positive" });
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
    mutate();
  }

  async function upload(files) {
    for (const file of files) {
      const relative = file.webkitRelativePath || file.relativePath || file.name;
      const form = new FormData();
      form.append("file", file, relative);
      const id = `${relative}-${Math.random()}`;
      setUploads((all) => [...all, { id, name: relative, progress: 0 }]);
      try {
        await api.upload("files/upload/", form, {
          params: { path },
          onProgress: (progress) => setUploads((all) => all.map((u) => (u.id === id ? { ...u, progress } : u))),
        });
        notify(`Uploaded ${relative}`, { type: "positive" });
      } catch (e) {
        notify(`${relative}: ${errorText(e)}`, { type: "negative" });
      } finally {
        setUploads((all) => all.filter((u) => u.id !== id));
        mutate();
      }
    }
  }

  async function download(entry) {
    try {
      const blob = await api.download("files/download/", { path: join(path, entry.name) });
      const link = document.createElement("a");
      link.href = URL.createObjectURL(blob);
      link.download = entry.name;
      link.click();
      setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }

  function rename(entry) {
    const name = window.prompt(`Rename ${entry.name} to:`, entry.name);
    if (name && name !== entry.name) {
      act(api.post("files/rename/", { path: join(path, entry.name), new_path: join(path, name) }), `Renamed to ${name}`);
    }
  }

  function newFolder() {
    const name = window.prompt("Name of the new folder:");
    if (name) act(api.post("files/mkdir/", { path: join(path, name) }), `Created ${name}`);
  }

  const header = (label, sortKey) => (
    <th>
      <button onClick={() => setSort({ key: sortKey, up: sort.key === sortKey ? !sort.up : true })}>
        {label} {sort.key === sortKey ? (sort.up ? "▲" : "▼") : ""}
      </button>
    </th>
  );

  return (
    <>
      <h1>Files</h1>
      <nav className="breadcrumbs" aria-label="Folder">
        <button onClick={() => setPath("/")}>Home</button>
        {crumbs.map((part, i) => (
          <span key={i}>/<button onClick={() => setPath(`/${crumbs.slice(0, i + 1).join("/")}`)}>{part}</button></span>
        ))}
      </nav>
      <div className="toolbar">
        <label className="button" style={{ width: "auto", margin: 0 }}>
          Upload files
          <input type="file" multiple className="visually-hidden" onChange={(e) => upload([...e.target.files])} aria-label="Upload files" />
        </label>
        <label className="button" style={{ width: "auto", margin: 0 }}>
          Upload a folder
          <input type="file" webkitdirectory="" className="visually-hidden" onChange={(e) => upload([...e.target.files])} aria-label="Upload a folder" />
        </label>
        <button onClick={newFolder}>New folder</button>
      </div>
      <div
        className={`dropzone ${over ? "over" : ""}`}
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={(e) => {
          e.preventDefault();
          setOver(false);
          upload([...e.dataTransfer.files]);
        }}
      >
        Drop files here to upload them into this folder
      </div>
      {uploads.map((u) => (
        <div key={u.id}>
          {u.name} <progress value={u.progress} max={1} aria-label={`Uploading ${u.name}`} />
        </div>
      ))}
      {error ? <p className="error" role="alert">{errorText(error)}</p> : null}
      <table>
        <thead>
          <tr>
            {header("Name", "name")}
            {header("Size", "size")}
            {header("Modified", "modified")}
            <th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {entries.length === 0 ? (
            <tr><td colSpan={4}>This folder is empty.</td></tr>
          ) : (
            entries.map((entry) => (
              <tr key={entry.name}>
                <td>
                  {entry.type === "dir" ? (
                    <button className="flat" onClick={() => setPath(join(path, entry.name))}>📁 {entry.name}</button>
                  ) : (
                    <span>{entry.name}</span>
                  )}
                </td>
                <td>{entry.type === "dir" ? "" : size(entry.size)}</td>
                <td>{new Date(entry.modified).toLocaleString()}</td>
                <td className="toolbar">
                  {entry.type !== "dir" ? <button className="flat" onClick={() => download(entry)}>Download</button> : null}
                  <button className="flat" onClick={() => rename(entry)}>Rename</button>
                  <button className="flat" onClick={() => setDeleting(entry)}>Delete</button>
                </td>
              </tr>
            ))
          )}
        </tbody>
      </table>
      {deleting ? (
        <ConfirmDialog
          title="Delete"
          message={`Delete ${deleting.name}${deleting.type === "dir" ? " and everything in it" : ""}?`}
          onCancel={() => setDeleting(null)}
          onConfirm={() => {
            const entry = deleting;
            setDeleting(null);
            act(api.delete("files/", { path: join(path, entry.name) }), `Deleted ${entry.name}`);
          }}
        />
      ) : null}
    </>
  );
}
