import { useState } from "react";
import { errorText } from "../../../components/notifications.jsx";
import { useCheckSource } from "../api/checkSource.js";

/**
 * "Check connection": POST sources/{id}/check/, then the outcome beside the button;
 * `onChecked(source)` gets the source as the check left it (status, last_error).
 */
export function CheckConnection({ source, onChecked }) {
  const check = useCheckSource();
  const [state, setState] = useState({ busy: false, result: null });
  async function run() {
    setState({ busy: true, result: null });
    try {
      const checked = await check(source.id);
      if (onChecked) await onChecked(checked);
      setState({
        busy: false,
        result:
          checked.status === "ok"
            ? { ok: true, text: "The connection works." }
            : { ok: false, text: checked.last_error || "The check failed." },
      });
    } catch (error) {
      setState({ busy: false, result: { ok: false, text: errorText(error) } });
    }
  }
  const { busy, result } = state;
  return (
    <div className="check-connection">
      <button type="button" className="secondary" onClick={run} disabled={busy}>
        {busy ? "Checking…" : "Check connection"}
      </button>
      <span
        role="status"
        data-testid="check-result"
        className={result ? (result.ok ? "positive-text" : "error") : ""}
      >
        {result ? ` ${result.text}` : ""}
      </span>
    </div>
  );
}
