import { useState } from "react";
import { Breadcrumbs } from "../../../components/Breadcrumbs.jsx";
import { FileTable } from "../../../components/FileTable.jsx";
import { joinPath } from "../../../lib/paths.js";
import { useSharedFiles } from "../api/getSharedFiles.js";
import { sharedDownloadUrl } from "../api/sharedDownloadUrl.js";

/** A shared folder's listing: open sub-folders, download files by plain links. */
export function SharedFolder({ token, access, name }) {
  const [path, setPath] = useState("/");
  const { data, error } = useSharedFiles(token, path, access, true);
  return (
    <>
      <Breadcrumbs
        path={path}
        root={name || "Shared folder"}
        onOpen={setPath}
      />
      <FileTable
        entries={data ? data.entries : null}
        error={error}
        onOpen={(entry) => setPath(joinPath(path, entry.name))}
        actionsLabel="Download"
        actions={(entry) =>
          entry.type === "dir" ? null : (
            <a
              href={sharedDownloadUrl(
                token,
                joinPath(path, entry.name),
                access,
              )}
              download={entry.name}
            >
              Download
            </a>
          )
        }
      />
    </>
  );
}
