import { ResourceListPage } from "../../../components/lists.jsx";
import { useSources } from "../api/getSources.js";
import { SourceStatus } from "../components/SourceStatus.jsx";
import { sourceLocation, typeLabel } from "../components/sourceTypes.js";

const COLUMNS = [
  ["Name", (s) => s.name],
  [
    // the organisation's default source (not the word "default": the first source is named Default)
    "New profiles",
    (s) =>
      s.default ? (
        <span
          className="badge positive"
          title="The organisation's default source: new profiles get it"
          data-testid="default-badge"
        >
          get this source
        </span>
      ) : (
        ""
      ),
  ],
  ["Type", (s) => typeLabel(s.type)],
  ["Location", sourceLocation],
  ["Read-only", (s) => (s.read_only ? "yes" : "")],
  ["Status", (s) => <SourceStatus source={s} />],
  ["Problem", (s) => s.last_error],
];

export function SourceList() {
  return (
    <ResourceListPage
      title="Sources"
      createTo="/admin/sources/create"
      useList={useSources}
      columns={COLUMNS}
      rowLink={(s) => `/admin/sources/${s.id}`}
    />
  );
}
