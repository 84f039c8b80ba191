import { useCallback, useState } from "react";
import { useSearchParams } from "react-router";
import { useConfirm } from "../../../components/Dialog.jsx";
import { Breadcrumbs } from "../../../components/Breadcrumbs.jsx";
import { FileTable } from "../../../components/FileTable.jsx";
import { errorText, useNotify } from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { followDownload } from "../../../lib/followDownload.js";
import { joinPath } from "../../../lib/paths.js";
import { createFolder } from "../api/createFolder.js";
import { deleteEntry } from "../api/deleteEntry.js";
import { createDownloadLink } from "../api/createDownloadLink.js";
import { useFiles } from "../api/getFiles.js";
import { useRefusals } from "../api/getInformation.js";
import { renameEntry } from "../api/renameEntry.js";
import { collectDrop, collectInput } from "../components/dropped.js";
import { NameDialog } from "../components/NameDialog.jsx";
import { RowActions } from "../components/RowActions.jsx";
import { sortEntries } from "../components/paths.js";
import { ShareDialog } from "../components/ShareDialog.jsx";
import { SharesDialog } from "../components/SharesDialog.jsx";
import { UploadList } from "../components/UploadList.jsx";
import { useUploads } from "../components/useUploads.js";

export function FileViewer() {
  usePageTitle("Fileviewer"); // the side menu's word (console-spec §2)
  const notify = useNotify();
  const confirm = useConfirm();
  const [params, setParams] = useSearchParams();
  const path = params.get("path") || "/";
  const [sort, setSort] = useState({ key: "name", up: true });
  const [over, setOver] = useState(false);
  const [dialog, setDialog] = useState(null); // {kind: "mkdir" | "rename" | "share", entry}
  const { data, error, mutate } = useFiles(path);
  const refused = useRefusals(); // buttons the user may not use are disabled, saying why
  const refresh = useCallback(() => mutate(), [mutate]);
  const { uploads, start, cancel, dismiss } = useUploads({
    notify,
    onBatchDone: refresh,
  });
  const entries = data ? sortEntries(data.entries || [], sort) : null;
  const open = (target) => setParams(target === "/" ? {} : { path: target });

  async function run(action, done) {
    try {
      await action();
      if (done) notify(done, { type: "positive" });
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
    await mutate();
  }
  async function uploadDropped(dataTransfer) {
    const { files, folders } = await collectDrop(dataTransfer);
    for (const folder of folders) {
      await run(() => createFolder(joinPath(path, folder)));
    }
    await start(files, path);
  }
  async function download(entry) {
    try {
      // a short-lived signed link: the browser saves the file itself, however large
      const { url } = await createDownloadLink(joinPath(path, entry.name));
      followDownload(url, entry.name);
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }
  async function remove(entry) {
    const folder = entry.type === "dir";
    const sure = await confirm({
      title: folder ? "Delete the folder" : "Delete the file",
      message: `Delete ${entry.name}${folder ? " and everything in it" : ""}? This cannot be undone.`,
    });
    if (sure)
      await run(
        () => deleteEntry(joinPath(path, entry.name)),
        `Deleted ${entry.name}`,
      );
  }
  async function rename(entry, name) {
    if (name === entry.name) return;
    try {
      await renameEntry(joinPath(path, entry.name), joinPath(path, name));
    } catch (e) {
      throw new Error(errorText(e), { cause: e });
    }
    notify(`Renamed ${entry.name} to ${name}`, { type: "positive" });
    await mutate();
  }
  async function makeFolder(name) {
    try {
      await createFolder(joinPath(path, name), { parents: false });
    } catch (e) {
      throw new Error(errorText(e), { cause: e });
    }
    notify(`Created ${name}`, { type: "positive" });
    await mutate();
  }

  return (
    <div
      className={`file-viewer ${over ? "drag-over" : ""}`}
      onDragOver={(e) => {
        if (!refused.upload && [...e.dataTransfer.types].includes("Files")) {
          e.preventDefault();
          setOver(true);
        }
      }}
      onDragLeave={(e) => {
        if (!e.currentTarget.contains(e.relatedTarget)) setOver(false);
      }}
      onDrop={(e) => {
        e.preventDefault();
        setOver(false);
        uploadDropped(e.dataTransfer);
      }}
    >
      <div className="page-header">
        <div>
          <h1>Fileviewer</h1>
          <Breadcrumbs path={path} onOpen={open} />
        </div>
        <div className="toolbar">
          <label
            className={`button ${refused.upload ? "disabled" : ""}`}
            title={refused.upload || undefined}
          >
            Upload files
            <input
              type="file"
              multiple
              disabled={Boolean(refused.upload)}
              className="visually-hidden"
              aria-label="Upload files"
              onChange={(e) => {
                start(collectInput(e.target.files), path);
                e.target.value = "";
              }}
            />
          </label>
          <label
            className={`button secondary ${refused.upload ? "disabled" : ""}`}
            title={refused.upload || undefined}
          >
            Upload a folder
            <input
              type="file"
              webkitdirectory=""
              disabled={Boolean(refused.upload)}
              className="visually-hidden"
              aria-label="Upload a folder"
              onChange={(e) => {
                start(collectInput(e.target.files), path);
                e.target.value = "";
              }}
            />
          </label>
          <button
            className="secondary"
            onClick={() => setDialog({ kind: "mkdir" })}
            disabled={Boolean(refused.mkdir)}
            title={refused.mkdir || undefined}
          >
            New folder
          </button>
          <button
            className="flat"
            onClick={() => setDialog({ kind: "shares" })}
          >
            Shared links
          </button>
        </div>
      </div>
      {refused.upload ? null : (
        <p className="dropzone" aria-hidden="true">
          Drop files or folders anywhere here to upload them into this folder.
        </p>
      )}
      <UploadList uploads={uploads} onCancel={cancel} onDismiss={dismiss} />
      <FileTable
        entries={entries}
        error={error}
        sort={sort}
        onSort={setSort}
        onOpen={(entry) => open(joinPath(path, entry.name))}
        actions={(entry) => (
          <RowActions
            entry={entry}
            refused={refused}
            onDownload={download}
            onRename={() => setDialog({ kind: "rename", entry })}
            onDelete={remove}
            onShare={() => setDialog({ kind: "share", entry })}
          />
        )}
      />
      {dialog && dialog.kind === "mkdir" ? (
        <NameDialog
          title="New folder"
          label="Name of the new folder"
          submitLabel="Create"
          onSubmit={makeFolder}
          onClose={() => setDialog(null)}
        />
      ) : null}
      {dialog && dialog.kind === "rename" ? (
        <NameDialog
          title={`Rename ${dialog.entry.name}`}
          label="New name"
          initial={dialog.entry.name}
          submitLabel="Rename"
          onSubmit={(name) => rename(dialog.entry, name)}
          onClose={() => setDialog(null)}
        />
      ) : null}
      {dialog && dialog.kind === "shares" ? (
        <SharesDialog onClose={() => setDialog(null)} />
      ) : null}
      {dialog && dialog.kind === "share" ? (
        <ShareDialog
          entry={dialog.entry}
          path={joinPath(path, dialog.entry.name)}
          onClose={() => setDialog(null)}
        />
      ) : null}
    </div>
  );
}
