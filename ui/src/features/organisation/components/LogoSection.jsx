import { useState } from "react";
import { useConfirm } from "../../../components/Dialog.jsx";
import { fieldErrors } from "../../../components/forms.jsx";
import {
  errorText,
  useAttemptNotify,
} from "../../../components/notifications.jsx";
import { useRemoveLogo } from "../api/removeLogo.js";
import {
  LOGO_TYPES,
  MAX_LOGO_BYTES,
  useUploadLogo,
} from "../api/uploadLogo.js";

/** Why a chosen file cannot be the logo, before it is sent; null when it may be. */
export function logoProblem(file) {
  if (file.size > MAX_LOGO_BYTES)
    return `The logo is too large: at most ${MAX_LOGO_BYTES / 1024} KiB.`;
  if (file.type && !LOGO_TYPES.includes(file.type))
    return "Choose a PNG, JPEG or SVG image.";
  return null;
}

/** The organisation's logo: preview, upload (PNG, JPEG, SVG up to 512 KiB), removal. */
export function LogoSection({ organisation }) {
  const notify = useAttemptNotify();
  const confirm = useConfirm();
  const upload = useUploadLogo();
  const remove = useRemoveLogo();
  const [error, setError] = useState("");
  const [progress, setProgress] = useState(null);

  async function choose(file) {
    if (!file) return;
    const problem = logoProblem(file);
    setError(problem || "");
    if (problem) return;
    setProgress(0);
    try {
      await upload(organisation.id, file, { onProgress: setProgress });
      notify("Logo saved", { type: "positive" });
    } catch (e) {
      const fields = fieldErrors(e);
      setError(fields.logo ? fields.logo.join(" ") : errorText(e));
      notify(errorText(e), { type: "negative" });
    } finally {
      setProgress(null);
    }
  }
  async function drop() {
    const sure = await confirm({
      title: "Remove the logo",
      message: "Show the default logo again?",
      confirm: "Remove",
    });
    if (!sure) return;
    try {
      await remove(organisation.id);
      notify("Logo removed", { type: "positive" });
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }
  return (
    <section className="card">
      <h2>Logo</h2>
      <div className="logo-row">
        <div className="logo-preview" data-testid="logo-preview">
          {organisation.branding_logo ? (
            <img
              src={organisation.branding_logo}
              alt="The organisation's logo"
            />
          ) : (
            <span className="help">No logo yet</span>
          )}
        </div>
        <div>
          <div className="toolbar">
            <label className="button secondary">
              {organisation.branding_logo
                ? "Replace the logo"
                : "Upload a logo"}
              <input
                type="file"
                accept={LOGO_TYPES.join(",")}
                className="visually-hidden"
                aria-label="Upload a logo"
                onChange={(e) => {
                  choose(e.target.files[0]);
                  e.target.value = "";
                }}
              />
            </label>
            {organisation.branding_logo ? (
              <button className="flat danger-text" onClick={drop}>
                Remove
              </button>
            ) : null}
          </div>
          {progress !== null ? (
            <progress
              value={progress}
              max={1}
              aria-label="Uploading the logo"
            />
          ) : null}
          <small className="help">
            PNG, JPEG or SVG, at most 512 KiB. Shown on the sign-in page and in
            the side menu when branding is on.
          </small>
          {error ? (
            <span className="field-error" role="alert">
              {error}
            </span>
          ) : null}
        </div>
      </div>
    </section>
  );
}
