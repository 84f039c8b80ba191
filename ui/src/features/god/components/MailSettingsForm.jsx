import {
  CheckboxField,
  FormErrors,
  TextField,
  useForm,
} from "../../../components/forms.jsx";
import { useNotify } from "../../../components/notifications.jsx";
import { useUpdateApplianceSettings } from "../api/updateApplianceSettings.js";
import {
  MAIL_KEYS,
  lockedText,
  mailChanges,
  mailValues,
} from "./applianceSettings.js";

/**
 * Where outbound mail goes, as the operator sets it: each field the config file
 * sets is shown, disabled, saying so; the password is never shown (leave it empty
 * to keep it). Saved settings apply to the next mail.
 */
export function MailSettingsForm({ settings }) {
  const update = useUpdateApplianceSettings();
  const notify = useNotify();
  const form = useForm(mailValues(settings));
  const smtp = settings.smtp;
  const help = (key, otherwise) => lockedText(smtp[key]) || otherwise;
  const editable = MAIL_KEYS.some((key) => smtp[key].editable);
  const save = form.submit(async (values) => {
    await update(mailChanges(values, settings));
    form.setValue("smtp.password", "");
    notify("Outbound mail settings saved: the next mail uses them", {
      type: "positive",
    });
  });
  return (
    <form onSubmit={save} noValidate>
      <h3>Where mail goes</h3>
      <div className="form-grid">
        <TextField
          form={form}
          name="smtp.host"
          label="Mail server"
          help={help(
            "host",
            "Its host name or address, like smtp.example.com.",
          )}
          disabled={!smtp.host.editable}
          autoComplete="off"
          spellCheck={false}
        />
        <TextField
          form={form}
          name="smtp.port"
          label="Port"
          inputMode="numeric"
          help={help("port", "Often 587 with STARTTLS, or 25.")}
          disabled={!smtp.port.editable}
        />
        <TextField
          form={form}
          name="smtp.sender"
          label="Sender address"
          type="email"
          help={help("sender", "The From: address of the appliance's mail.")}
          disabled={!smtp.sender.editable}
        />
        <TextField
          form={form}
          name="smtp.username"
          label="Mail server username"
          help={help(
            "username",
            "Empty: the appliance does not sign in to the mail server.",
          )}
          disabled={!smtp.username.editable}
          autoComplete="off"
        />
        <TextField
          form={form}
          name="smtp.password"
          label="Mail server password"
          type="password"
          placeholder={smtp.password.set ? "leave empty to keep" : ""}
          help={help(
            "password",
            smtp.password.set
              ? "A password is set: leave empty to keep it."
              : "None is set.",
          )}
          disabled={!smtp.password.editable}
          autoComplete="new-password"
        />
      </div>
      <CheckboxField
        form={form}
        name="smtp.starttls"
        label="Use STARTTLS"
        disabled={!smtp.starttls.editable}
      />
      {lockedText(smtp.starttls) ? (
        <p className="help">{lockedText(smtp.starttls)}</p>
      ) : null}
      <FormErrors form={form} />
      <div className="actions start">
        <button type="submit" disabled={form.busy || !editable}>
          {form.busy ? "Saving…" : "Save mail settings"}
        </button>
      </div>
    </form>
  );
}
