import { useEffect, useRef, useState } from "react";
import { Link, useNavigate, useSearchParams } from "react-router";
import { PageHeader } from "../../../components/lists.jsx";
import { errorText, useNotify } from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { useCheckSource } from "../api/checkSource.js";

/** The source a connection flow returns for: ?source=ID (or ?state=ID), and its error if any. */
export function callbackTarget(params) {
  const raw = params.get("source") || params.get("state") || "";
  const id = /^\d+$/.test(raw) ? Number(raw) : null;
  const error = params.get("error_description") || params.get("error") || "";
  return { id, error };
}

/**
 * /admin/sources/callback: where a source's connection flow (a provider's consent
 * page) returns. Checks the source so its status is current, then goes back to it.
 */
export function SourceCallback() {
  usePageTitle("Connecting the source");
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const notify = useNotify();
  const check = useCheckSource();
  const [problem, setProblem] = useState("");
  const started = useRef(false);
  const { id, error } = callbackTarget(params);

  useEffect(() => {
    if (started.current) return;
    started.current = true;
    if (id === null) return;
    if (error) {
      notify(`The source was not connected: ${error}`, {
        type: "negative",
        timeout: 0,
      });
      navigate(`/admin/sources/${id}`, { replace: true });
      return;
    }
    check(id).then(
      (source) => {
        notify(
          source.status === "ok"
            ? `${source.name} is connected`
            : `${source.name}: ${source.last_error}`,
          {
            type: source.status === "ok" ? "positive" : "warning",
          },
        );
        navigate(`/admin/sources/${id}`, { replace: true });
      },
      (e) => setProblem(errorText(e)),
    );
  }, [id, error, check, navigate, notify]);

  return (
    <>
      <PageHeader
        title="Connecting the source"
        back={["/admin/sources", "Sources"]}
      />
      <div className="card">
        {id === null ? (
          <p className="error" role="alert">
            This address does not say which source to finish connecting.{" "}
            <Link to="/admin/sources">Back to the sources</Link>
          </p>
        ) : problem ? (
          <p className="error" role="alert">
            {problem} <Link to="/admin/sources">Back to the sources</Link>
          </p>
        ) : (
          <p role="status">Finishing the connection…</p>
        )}
      </div>
    </>
  );
}
