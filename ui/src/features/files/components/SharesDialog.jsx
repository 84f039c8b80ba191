import { useState } from "react";
import { Dialog, useConfirm } from "../../../components/Dialog.jsx";
import { PagedTable } from "../../../components/lists.jsx";
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
  const columns = [
    [
      "Shared",
      (share) => (
        <>
          {share.path}
          <div className="help">
            {share.upload_only ? "drop box" : share.kind}
            {share.has_password ? ", password" : ""} · by {share.created_by}
          </div>
        </>
      ),
    ],
    ["State", (share) => shareState(share)],
    ["Expires", (share) => formatTime(share.expires_at, "never")],
    [
      "Downloads",
      (share) =>
        share.upload_only
          ? "—"
          : `${share.downloads}${share.max_downloads ? ` of ${share.max_downloads}` : ""}`,
    ],
    [
      "Actions",
      (share) =>
        share.revoked ? null : (
          <button
            className="flat small danger-text"
            onClick={() => revokeIt(share)}
            aria-label={`Revoke the link to ${share.path}`}
          >
            Revoke
          </button>
        ),
      { hideLabel: true },
    ],
  ];
  return (
    <Dialog
      title="Shared links"
      onClose={onClose}
      wide
      actions={<button onClick={onClose}>Close</button>}
    >
      <PagedTable
        data={data}
        error={error}
        page={page}
        onPage={setPage}
        columns={columns}
        empty="No links yet: use Share on a file or folder."
        caption="Shared links"
      />
    </Dialog>
  );
}
