import { useState } from "react";
import { Dialog, useConfirm } from "../../../components/Dialog.jsx";
import { Pager } from "../../../components/lists.jsx";
import { errorText, useNotify } from "../../../components/notifications.jsx";
import { formatTime } from "../../../lib/format.js";
import { useShares } from "../api/getShares.js";
import { useRevokeShare } from "../api/revokeShare.js";

/** A link's state in words. */
export function shareState(share, now = Date.now()) {
  if (share.revoked) return "revoked";
  if (share.expires_at && new Date(share.expires_at).getTime() <= now)
    return "expired";
  if (share.max_downloads !== null && share.downloads >= share.max_downloads)
    return "used up";
  return "active";
}

/** The share links made so far, with their use, and revocation after a confirm. */
export function SharesDialog({ onClose }) {
  const [page, setPage] = useState(1);
  const { data, error } = useShares({ page });
  const revoke = useRevokeShare();
  const confirm = useConfirm();
  const notify = useNotify();

  async function revokeIt(share) {
    const sure = await confirm({
      title: "Revoke the link",
      message: `Revoke the link to ${share.name}? Whoever has it can no longer use it.`,
      confirm: "Revoke",
    });
    if (!sure) return;
    try {
      await revoke(share.id);
      notify(`Revoked the link to ${share.name}`, { type: "positive" });
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }
  return (
    <Dialog
      title="Shared links"
      onClose={onClose}
      wide
      actions={<button onClick={onClose}>Close</button>}
    >
      {error ? (
        <p className="error" role="alert">
          {errorText(error)}
        </p>
      ) : null}
      <div className="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Shared</th>
              <th scope="col">State</th>
              <th scope="col">Expires</th>
              <th scope="col">Downloads</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {data && data.results.length === 0 ? (
              <tr>
                <td colSpan={5}>
                  No links yet: use Share on a file or folder.
                </td>
              </tr>
            ) : null}
            {(data ? data.results : []).map((share) => {
              const state = shareState(share);
              return (
                <tr key={share.id}>
                  <td className="name">
                    {share.path}
                    <div className="help">
                      {share.upload_only ? "drop box" : share.kind}
                      {share.has_password ? ", password" : ""} · by{" "}
                      {share.created_by}
                    </div>
                  </td>
                  <td>{state}</td>
                  <td>{formatTime(share.expires_at, "never")}</td>
                  <td>
                    {share.upload_only
                      ? "—"
                      : `${share.downloads}${share.max_downloads ? ` of ${share.max_downloads}` : ""}`}
                  </td>
                  <td>
                    {share.revoked ? null : (
                      <button
                        className="flat small danger-text"
                        onClick={() => revokeIt(share)}
                        aria-label={`Revoke the link to ${share.path}`}
                      >
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <Pager data={data} page={page} onPage={setPage} />
    </Dialog>
  );
}
