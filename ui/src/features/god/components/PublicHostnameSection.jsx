import { useId } from "react";
import { FormErrors, TextField, useForm } from "../../../components/forms.jsx";
import { LoadError, useNotify } from "../../../components/notifications.jsx";
import { useApplianceSettings } from "../api/getApplianceSettings.js";
import { useUpdateApplianceSettings } from "../api/updateApplianceSettings.js";
import {
  SETTING_SECTIONS,
  hostChanges,
  lockedText,
  sourceText,
} from "./applianceSettings.js";
import { useScrollToHash } from "./useScrollToHash.js";

const ANCHOR = SETTING_SECTIONS["server.public_hostname"].anchor;

function HostnameForm({ item }) {
  const update = useUpdateApplianceSettings();
  const notify = useNotify();
  const form = useForm({ "server.public_hostname": item.value });
  const locked = lockedText(item);
  const save = form.submit(async (values) => {
    const saved = await update(hostChanges(values["server.public_hostname"]));
    const now = saved.server.public_hostname.value;
    form.setValue("server.public_hostname", now);
    notify(`Public host name saved: links now name ${now}`, {
      type: "positive",
    });
  });
  return (
    <form onSubmit={save} noValidate>
      <TextField
        form={form}
        name="server.public_hostname"
        label="Public host name"
        help={
          locked ||
          `Like files.example.com, or files.example.com:443 behind a proxy that serves HTTPS; empty goes back to the default. Now: ${sourceText(item)}.`
        }
        disabled={!item.editable}
        autoComplete="off"
        spellCheck={false}
      />
      <FormErrors form={form} />
      <div className="actions start">
        <button type="submit" disabled={form.busy || !item.editable}>
          {form.busy ? "Saving…" : "Save the host name"}
        </button>
      </div>
    </form>
  );
}

/** The operator's setting of the public host name, which every link names. */
export function PublicHostnameSection() {
  const { data, error } = useApplianceSettings();
  const headingId = useId();
  useScrollToHash(ANCHOR, Boolean(data));
  return (
    <section
      className="card"
      id={ANCHOR}
      aria-labelledby={headingId}
      data-testid="public-host-name"
    >
      <h2 id={headingId}>Public host name</h2>
      <p className="help">
        The name people reach the appliance at: invitations, password resets and
        share links link to it, and “How do I connect?” names it.
      </p>
      <LoadError error={error} />
      {data ? <HostnameForm item={data.server.public_hostname} /> : null}
    </section>
  );
}
