import { Link, useRouteError } from "react-router";
import { usePageTitle } from "../../components/PageMeta.js";

/** /error, and what a route shows when it fails to load or render. */
export function ErrorPage() {
  usePageTitle("Something went wrong");
  const error = useRouteError();
  if (error) console.error("console error:", error);
  return (
    <div className="card error-page">
      <h1>Something went wrong</h1>
      <p>
        The console met an error and could not show this page. Reload the page,
        or start again.
      </p>
      <p>
        <Link to="/">Go to the start page</Link>
      </p>
    </div>
  );
}
