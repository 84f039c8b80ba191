import { useId, useMemo, useState } from "react";
import { useConfirm } from "../../../components/Dialog.jsx";
import { PagedTable } from "../../../components/lists.jsx";
import {
  errorText,
  useAttemptNotify,
} from "../../../components/notifications.jsx";
import { useFolders } from "../api/getFolders.js";
import { useReleaseFolder } from "../api/releaseFolder.js";
import { folderRowId, folderUse, sharedWarning } from "./folders.js";
import { statusText } from "./statuses.js";

export const RELEASE_WARNING =
  "Any organisation may then make a source in this folder and read the files left in it.";

/**
 * The operator's view of every local folder: whose it is, what uses it, the folders
 * kept for an organisation after their source was deleted (which the operator may
 * release) and folders two organisations share.
 */
export function FoldersSection() {
  const [page, setPage] = useState(1);
  const { data, error, isLoading } = useFolders({ page });
  const release = useReleaseFolder();
  const confirm = useConfirm();
  const notify = useAttemptNotify();
  const [releasing, setReleasing] = useState(null);
  const headingId = useId();
  const shown = useMemo(
    () =>
      data && {
        ...data,
        results: data.results.map((row) => ({ ...row, id: folderRowId(row) })),
      },
    [data],
  );
  const names = useMemo(
    () =>
      new Map(
        (data ? data.results : []).map((row) => [
          row.organisation.id,
          row.organisation.name,
        ]),
      ),
    [data],
  );

  async function releaseNow(row) {
    const sure = await confirm({
      title: "Release the folder",
      message: `Release ${row.path}, kept for ${row.organisation.name} since its source ${row.reserved.source} was deleted? ${RELEASE_WARNING}`,
      confirm: "Release",
    });
    if (!sure) return;
    setReleasing(row.id);
    try {
      await release(row.reserved.id);
      notify(`Released ${row.path}`, { type: "positive" });
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    } finally {
      setReleasing(null);
    }
  }

  const columns = [
    ["Folder", (f) => <code>{f.path}</code>],
    [
      "Organisation",
      (f) => (
        <>
          {f.organisation.name}{" "}
          <span className={`badge status-${f.organisation.status}`}>
            {statusText(f.organisation.status)}
          </span>
        </>
      ),
    ],
    ["Use", folderUse],
    [
      "Shared with",
      (f) => {
        const warning = sharedWarning(f, names);
        return warning ? (
          <span className="badge warning" data-testid="shared-folder">
            {warning}
          </span>
        ) : null;
      },
    ],
    [
      "Actions",
      (f) =>
        f.reserved ? (
          <button
            className="flat danger-text"
            disabled={releasing === f.id}
            aria-label={`Release ${f.path}`}
            onClick={() => releaseNow(f)}
          >
            {releasing === f.id ? "Releasing…" : "Release"}
          </button>
        ) : null,
    ],
  ];
  return (
    <section
      className="card"
      aria-labelledby={headingId}
      data-testid="local-folders"
    >
      <h2 id={headingId}>Local folders</h2>
      <p className="help">
        Every folder on this machine an organisation uses. A folder whose source
        was deleted with its files kept stays reserved for its organisation
        until you release it.
      </p>
      <PagedTable
        data={shown}
        error={error}
        isLoading={isLoading}
        page={page}
        onPage={setPage}
        columns={columns}
        empty="No organisation uses a local folder."
        caption="Local folders"
      />
    </section>
  );
}
