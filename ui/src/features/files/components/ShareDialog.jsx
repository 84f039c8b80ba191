import { useState } from "react";
import { CopyButton } from "../../../components/CopyButton.jsx";
import { Dialog } from "../../../components/Dialog.jsx";
import {
  CheckboxField,
  FormErrors,
  TextField,
  TextareaField,
  useForm,
  wholeOrNull,
} from "../../../components/forms.jsx";
import {
  formatTime,
  fromLocalInput,
  toLocalInput,
} from "../../../lib/format.js";
import { useCreateShare } from "../api/createShare.js";

const DEFAULT_DAYS = 7;

export function defaultExpiry(now = new Date()) {
  return toLocalInput(
    new Date(now.getTime() + DEFAULT_DAYS * 86400_000).toISOString(),
  );
}

/** The body of POST shares/ from the dialog's values. */
export function shareBody(path, values) {
  const body = {
    path,
    expires_at: fromLocalInput(values.expires_at),
    upload_only: Boolean(values.upload_only),
  };
  if (values.password) body.password = values.password;
  if (!body.upload_only && values.max_downloads !== "")
    body.max_downloads = wholeOrNull(values.max_downloads);
  const recipients = values.recipients
    .split(/[\s,;]+/)
    .map((r) => r.trim())
    .filter(Boolean);
  if (recipients.length) {
    body.recipients = recipients;
    if (values.message.trim()) body.message = values.message.trim();
  }
  return body;
}

/** Make a share link for a file or folder: expiry, password, download limit, or a drop box. */
export function ShareDialog({ entry, path, onClose }) {
  const [created, setCreated] = useState(null);
  const createShare = useCreateShare();
  const folder = entry.type === "dir";
  const form = useForm({
    expires_at: defaultExpiry(),
    password: "",
    max_downloads: "",
    upload_only: false,
    recipients: "",
    message: "",
  });
  const save = form.submit(async (values) =>
    setCreated(await createShare(shareBody(path, values))),
  );
  if (created) {
    return (
      <Dialog
        title={`Share ${entry.name}`}
        onClose={onClose}
        actions={
          <>
            <CopyButton
              text={created.url}
              label="Copy link"
              className="secondary"
            />
            <button onClick={onClose}>Done</button>
          </>
        }
      >
        <p>
          Anyone with this link can{" "}
          {created.upload_only ? "upload files into the folder" : "download it"}
          :
        </p>
        <p className="secret">
          <code data-testid="share-url">{created.url}</code>
        </p>
        <p className="help">
          It works until {formatTime(created.expires_at)}
          {created.max_downloads
            ? `, for ${created.max_downloads} downloads`
            : ""}
          {created.has_password ? ", with the password" : ""}. It is shown only
          now: copy it.
        </p>
      </Dialog>
    );
  }
  return (
    <Dialog
      title={`Share ${entry.name}`}
      onClose={onClose}
      wide
      actions={
        <>
          <button type="button" className="flat" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" form="share-dialog" disabled={form.busy}>
            Create link
          </button>
        </>
      }
    >
      <form id="share-dialog" onSubmit={save}>
        <TextField
          form={form}
          name="expires_at"
          label="Expires"
          type="datetime-local"
          required
        />
        <TextField
          form={form}
          name="password"
          label="Password"
          type="password"
          autoComplete="new-password"
          help="Optional: visitors must enter it."
        />
        {folder ? (
          <CheckboxField
            form={form}
            name="upload_only"
            label="Drop box: visitors may only upload files into it"
          />
        ) : null}
        {!form.values.upload_only ? (
          <TextField
            form={form}
            name="max_downloads"
            label="Download limit"
            type="number"
            min="1"
            help="Optional: the link stops working after this many downloads."
          />
        ) : null}
        <TextField
          form={form}
          name="recipients"
          label="Send the link to"
          help="Optional: email addresses, separated by commas."
        />
        {form.values.recipients.trim() ? (
          <TextareaField form={form} name="message" label="Message" rows={3} />
        ) : null}
        <FormErrors form={form} />
      </form>
    </Dialog>
  );
}
