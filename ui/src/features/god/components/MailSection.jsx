import { Fragment, useId, useState } from "react";
import {
  LoadError,
  errorText,
  useAttemptNotify,
} from "../../../components/notifications.jsx";
import { useApplianceSettings } from "../api/getApplianceSettings.js";
import { useMailState } from "../api/getMailState.js";
import { useSendTestMail } from "../api/sendTestMail.js";
import { SETTING_SECTIONS } from "./applianceSettings.js";
import { MailSettingsForm } from "./MailSettingsForm.jsx";
import { mailState } from "./mailState.js";
import { PublicHostnameSection } from "./PublicHostnameSection.jsx";
import { useScrollToHash } from "./useScrollToHash.js";

const ANCHOR = SETTING_SECTIONS["smtp.host"].anchor;

/**
 * The appliance's settings the operator keeps in the console: the public host
 * name, then outbound mail ([smtp]): its state, where it goes and a test mail.
 */
export function MailSection() {
  return (
    <>
      <PublicHostnameSection />
      <OutboundMail />
    </>
  );
}

function OutboundMail() {
  const { data, error } = useMailState();
  const { data: settings, error: settingsError } = useApplianceSettings();
  useScrollToHash(ANCHOR, Boolean(data && settings));
  const send = useSendTestMail();
  const notify = useAttemptNotify();
  const [to, setTo] = useState("");
  const [busy, setBusy] = useState(false);
  const headingId = useId();
  async function test(event) {
    event.preventDefault();
    setBusy(true);
    try {
      const result = await send(to.trim());
      if (result.sent)
        notify(`Test mail sent to ${result.to}`, { type: "positive" });
      else
        notify(`The test mail to ${result.to} failed: ${result.error}`, {
          type: "negative",
          timeout: 0,
        });
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    } finally {
      setBusy(false);
    }
  }
  const shown = data ? mailState(data) : null;
  return (
    <section
      className="card"
      id={ANCHOR}
      aria-labelledby={headingId}
      data-testid="mail-state"
    >
      <h2 id={headingId}>Outbound mail</h2>
      <LoadError error={error || settingsError} />
      {shown ? (
        <>
          <p>
            <span className={`badge ${shown.tone}`}>{shown.label}</span>{" "}
            {shown.summary}
          </p>
          <dl className="details">
            {shown.rows.map(([term, text]) => (
              <Fragment key={term}>
                <dt>{term}</dt>
                <dd>{text}</dd>
              </Fragment>
            ))}
          </dl>
        </>
      ) : null}
      {settings ? <MailSettingsForm settings={settings} /> : null}
      <form className="actions" onSubmit={test}>
        <label className="field">
          <span>Test mail to</span>
          <input
            type="email"
            value={to}
            placeholder="your own address"
            onChange={(event) => setTo(event.target.value)}
          />
        </label>
        <button type="submit" disabled={busy}>
          {busy ? "Sending…" : "Send a test mail"}
        </button>
      </form>
    </section>
  );
}
