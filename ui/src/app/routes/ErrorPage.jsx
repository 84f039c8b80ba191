import { Link, useRouteError } from "react-router";
import { usePageTitle } from "../../components/PageMeta.js";

/**
 * A screen's code could not be fetched (the appliance or the connection was down
 * when it was first opened). The router keeps that failure for the rest of the
 * page's life, so only reloading the page recovers, once the appliance answers.
 */
export function isLoadFailure(error) {
  const message = String((error && error.message) || "");
  return (
    error instanceof TypeError &&
    /dynamically imported module|module script failed|Failed to fetch/i.test(
      message,
    )
  );
}

/** /error, and what a route shows when it fails to load or render. */
export function ErrorPage() {
  usePageTitle("Something went wrong");
  const error = useRouteError();
  if (error) console.error("console error:", error);
  const unreachable = isLoadFailure(error);
  return (
    <div className="card error-page">
      <h1>Something went wrong</h1>
      <p>
        {unreachable
          ? "This page could not be loaded from the appliance: it or the connection may be down. Reload the page when it answers again."
          : "The console met an error and could not show this page. Reload the page, or start again."}
      </p>
      <p className="actions start">
        <button type="button" onClick={() => window.location.reload()}>
          Reload the page
        </button>
        <Link to="/">Go to the start page</Link>
      </p>
    </div>
  );
}
