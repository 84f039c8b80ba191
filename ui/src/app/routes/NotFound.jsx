import { Link } from "react-router";
import { usePageTitle } from "../../components/PageMeta.js";

export function NotFound() {
  usePageTitle("Page not found");
  return (
    <div className="card">
      <h1>Page not found</h1>
      <p>There is nothing at this address.</p>
      <p>
        <Link to="/">Go to the start page</Link>
      </p>
    </div>
  );
}
