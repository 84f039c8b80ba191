import { usePageTitle } from "../../../components/PageMeta.js";
import { useOrganisation } from "../api/getOrganisation.js";

export function UserTerms() {
  usePageTitle("User terms");
  const { data, error } = useOrganisation();
  return (
    <div className="card prose">
      <h1>User terms</h1>
      {error ? (
        <p className="error">The user terms could not be loaded.</p>
      ) : null}
      {data ? (
        <p className="pre-wrap">
          {data.user_terms || "Your organisation has not written user terms."}
        </p>
      ) : null}
    </div>
  );
}
