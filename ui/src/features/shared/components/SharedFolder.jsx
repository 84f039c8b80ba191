import { FileIcon, FolderIcon } from "../../../components/icons.jsx";
import { useState } from "react";
import { errorText } from "../../../components/notifications.jsx";
import { formatBytes, formatTime } from "../../../lib/format.js";
import { useSharedFiles } from "../api/getSharedFiles.js";
import { sharedDownloadUrl } from "../api/sharedDownloadUrl.js";

const join = (folder, name) => `${folder.replace(/\/+$/, "")}/${name}`;

/** A shared folder's listing: open sub-folders, download files by plain links. */
export function SharedFolder({ token, access, name }) {
  const [path, setPath] = useState("/");
  const { data, error } = useSharedFiles(token, path, access, true);
  const parts = path.split("/").filter(Boolean);
  return (
    <>
      <nav className="breadcrumbs" aria-label="Folder">
        <button className="link" onClick={() => setPath("/")}>
          {name || "Shared folder"}
        </button>
        {parts.map((part, i) => (
          <span key={i}>
            {" / "}
            <button
              className="link"
              onClick={() => setPath(`/${parts.slice(0, i + 1).join("/")}`)}
            >
              {part}
            </button>
          </span>
        ))}
      </nav>
      {error ? (
        <p className="error" role="alert">
          {errorText(error)}
        </p>
      ) : null}
      <div className="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Size</th>
              <th scope="col">Modified</th>
              <th scope="col">
                <span className="visually-hidden">Download</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {data && data.entries.length === 0 ? (
              <tr>
                <td colSpan={4}>This folder is empty.</td>
              </tr>
            ) : null}
            {(data ? data.entries : []).map((entry) => (
              <tr key={entry.name}>
                <td>
                  {entry.type === "dir" ? (
                    <button
                      className="link"
                      onClick={() => setPath(join(path, entry.name))}
                    >
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
                <td>
                  {entry.type === "dir" ? null : (
                    <a
                      href={sharedDownloadUrl(
                        token,
                        join(path, entry.name),
                        access,
                      )}
                      download={entry.name}
                    >
                      Download
                    </a>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
