import { useState } from "react";
import { Dialog } from "../../../components/Dialog.jsx";
import { nameProblem } from "./paths.js";

/** Asks for a name (new folder, rename); `onSubmit(name)` may throw to keep it open. */
export function NameDialog({
  title,
  label,
  initial = "",
  submitLabel,
  onSubmit,
  onClose,
}) {
  const [name, setName] = useState(initial);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  async function submit(event) {
    event.preventDefault();
    const problem = nameProblem(name);
    if (problem) {
      setError(problem);
      return;
    }
    setBusy(true);
    try {
      await onSubmit(name.trim());
      onClose();
    } catch (e) {
      setError(e.message);
      setBusy(false);
    }
  }
  return (
    <Dialog
      title={title}
      onClose={onClose}
      actions={
        <>
          <button type="button" className="flat" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" form="name-dialog" disabled={busy}>
            {submitLabel}
          </button>
        </>
      }
    >
      <form id="name-dialog" onSubmit={submit}>
        <label className="field">
          <span>{label}</span>
          <input
            value={name}
            onChange={(e) => setName(e.target.value)}
            aria-invalid={error ? true : undefined}
          />
        </label>
        {error ? (
          <span className="field-error" role="alert">
            {error}
          </span>
        ) : null}
      </form>
    </Dialog>
  );
}
