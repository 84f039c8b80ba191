import { Link } from "react-router";
import { PageHeader, ResourceList } from "../../../components/lists.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
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
  usePageTitle("API Tokens");
  return (
    <>
      <PageHeader title="API Tokens">
        <Link className="button" to="/admin/tokens/create">
          Create
        </Link>
      </PageHeader>
      <p className="help">
        Scripts sign in with a token as a Bearer token instead of a password.
      </p>
      <ResourceList
        useList={useTokens}
        columns={COLUMNS}
        rowLink={(t) => `/admin/tokens/${t.id}`}
        searchLabel="Search by name or prefix"
        caption="API tokens"
      />
    </>
  );
}
