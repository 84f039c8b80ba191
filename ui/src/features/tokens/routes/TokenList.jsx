import { ResourceListPage } from "../../../components/lists.jsx";
import { formatTime } from "../../../lib/format.js";
import { useTokens } from "../api/getTokens.js";
import { tokenState } from "../components/tokenState.js";

const COLUMNS = [
  ["Name", (t) => t.name],
  ["Prefix", (t) => <code>apl_{t.prefix}_…</code>],
  ["Scopes", (t) => t.scopes.join(", ")],
  ["State", (t) => tokenState(t)],
  ["Expires", (t) => formatTime(t.expires_at, "never")],
  ["Last used", (t) => formatTime(t.last_used_at, "never")],
];

export function TokenList() {
  return (
    <ResourceListPage
      title="API Tokens"
      createTo="/admin/tokens/create"
      help="Scripts sign in with a token as a Bearer token instead of a password."
      useList={useTokens}
      columns={COLUMNS}
      rowLink={(t) => `/admin/tokens/${t.id}`}
      searchLabel="Search by name or prefix"
      caption="API tokens"
    />
  );
}
