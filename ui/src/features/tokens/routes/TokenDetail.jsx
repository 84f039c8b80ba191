import { useParams } from "react-router";
import { useConfirm } from "../../../components/Dialog.jsx";
import { PageHeader } from "../../../components/lists.jsx";
import {
  errorText,
  useAttemptNotify,
} from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { formatTime } from "../../../lib/format.js";
import { useToken } from "../api/getToken.js";
import { useRevokeToken } from "../api/revokeToken.js";
import { tokenState } from "../components/tokenState.js";

export function TokenDetail() {
  const { pid } = useParams();
  const { data: token, error, mutate } = useToken(pid);
  usePageTitle(token ? `API token ${token.name}` : "API token");
  const notify = useAttemptNotify();
  const confirm = useConfirm();
  const revoke = useRevokeToken();

  async function revokeIt() {
    const sure = await confirm({
      title: "Revoke the token",
      message: `Revoke ${token.name}? Scripts using it are refused from now on. This cannot be undone.`,
      confirm: "Revoke",
    });
    if (!sure) return;
    try {
      await revoke(token.id);
      await mutate();
      notify(`Revoked ${token.name}`, { type: "positive" });
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }

  if (error) {
    return (
      <>
        <PageHeader title="API token" back={["/admin/tokens", "API Tokens"]} />
        <p className="error" role="alert">
          {errorText(error)}
        </p>
      </>
    );
  }
  if (!token) return <p>Loading…</p>;
  const state = tokenState(token);
  return (
    <>
      <PageHeader title={token.name} back={["/admin/tokens", "API Tokens"]}>
        {token.revoked ? null : (
          <button className="danger" onClick={revokeIt}>
            Revoke
          </button>
        )}
      </PageHeader>
      <div className="card">
        <dl className="details">
          <dt>State</dt>
          <dd data-testid="token-state">{state}</dd>
          <dt>Token</dt>
          <dd>
            <code>apl_{token.prefix}_…</code> (the rest was shown once, when it
            was made)
          </dd>
          <dt>Scopes</dt>
          <dd>{token.scopes.join(", ")}</dd>
          <dt>Created</dt>
          <dd>{formatTime(token.created_at)}</dd>
          <dt>Expires</dt>
          <dd>{formatTime(token.expires_at, "never")}</dd>
          <dt>Last used</dt>
          <dd>{formatTime(token.last_used_at, "never")}</dd>
        </dl>
      </div>
    </>
  );
}
