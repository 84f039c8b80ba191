import { useEffect, useRef, useState } from "react";
import { Link, useNavigate, useSearchParams } from "react-router";
import { PageHeader } from "../../../components/lists.jsx";
import { errorText, useNotify } from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { ApiError } from "../../../lib/api.js";
import { useFinishSignIn } from "../api/finishSignIn.js";

/**
 * What the provider sent back, as the body of POST sources/callback/: {code, state},
 * or {error, error_description, state}; null when the address holds neither.
 */
export function callbackBody(params) {
  const state = params.get("state") || "";
  const error = params.get("error") || "";
  const code = params.get("code") || "";
  if (!state || (!code && !error)) return null;
  if (error)
    return {
      state,
      error,
      error_description: params.get("error_description") || "",
    };
  return { state, code };
}

/**
 * /admin/sources/callback: where a source's provider sends the admin back after
 * signing in (OAuth2 authorization code with PKCE). Hands code and state to the
 * appliance, which exchanges the code, keeps the sign-in and checks the source,
 * then goes to the source.
 */
export function SourceCallback() {
  usePageTitle("Connecting the source");
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const notify = useNotify();
  const finish = useFinishSignIn();
  const [problem, setProblem] = useState(null);
  const started = useRef(false);
  const body = callbackBody(params);

  useEffect(() => {
    if (started.current || body === null) return;
    started.current = true;
    finish(body).then(
      (source) => {
        notify(
          source.status === "ok"
            ? `${source.name} is connected`
            : `${source.name}: ${source.last_error}`,
          { type: source.status === "ok" ? "positive" : "warning" },
        );
        navigate(`/admin/sources/${source.id}`, { replace: true });
      },
      (e) =>
        setProblem({
          text: errorText(e),
          source:
            e instanceof ApiError && Number.isInteger(e.data.source)
              ? e.data.source
              : null,
        }),
    );
  }, [body, finish, navigate, notify]);

  const back =
    problem && problem.source !== null
      ? [`/admin/sources/${problem.source}`, "Back to the source"]
      : ["/admin/sources", "Back to the sources"];
  return (
    <>
      <PageHeader
        title="Connecting the source"
        back={["/admin/sources", "Sources"]}
      />
      <div className="card">
        {body === null ? (
          <p className="error" role="alert">
            This address does not hold a sign-in to finish.{" "}
            <Link to="/admin/sources">Back to the sources</Link>
          </p>
        ) : problem ? (
          <p className="error" role="alert">
            The source was not connected: {problem.text}{" "}
            <Link to={back[0]}>{back[1]}</Link>
          </p>
        ) : (
          <p role="status">Finishing the sign-in…</p>
        )}
      </div>
    </>
  );
}
