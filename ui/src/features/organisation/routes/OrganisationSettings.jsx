import {
  CheckboxField,
  FormErrors,
  TextField,
  TextareaField,
  useForm,
} from "../../../components/forms.jsx";
import { PageHeader } from "../../../components/lists.jsx";
import { useNotify } from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { COLOUR_PATTERN, DEFAULT_BRANDING } from "../../../config/brand.js";
import { textOn } from "../../../lib/contrast.js";
import { formatTime } from "../../../lib/format.js";
import { useOrganisation } from "../api/getOrganisation.js";
import { useUpdateOrganisation } from "../api/updateOrganisation.js";
import { LogoSection } from "../components/LogoSection.jsx";

const STATUS_TEXT = {
  trial: "On trial",
  active: "Active: billing is in order",
  payment_missing: "Payment missing: the portal is paused",
  deleted: "Deleted",
};

/**
 * What the side menu's text will be on a branding colour, and a warning when the
 * colour is a mid-tone that neither white nor the usual dark text reads well on
 * (WCAG 4.5:1): the menu then falls back to black, and its highlights show little.
 */
export function colourContrast(value) {
  const { text, ratio, poor } = textOn(value);
  const ink =
    text === "#FFFFFF" ? "white" : text === "#000000" ? "black" : "dark";
  const shown = `${Math.floor(ratio * 10) / 10}:1`;
  return {
    text,
    note: `The menu's text will be ${ink} on it (contrast ${shown}).`,
    warning: poor
      ? `Poor contrast: neither white nor dark text reads well on this colour (the menu falls back to black at ${shown}). A darker or lighter colour is easier to read.`
      : null,
  };
}

/** A colour as #RRGGBB or empty; anything else is a field error before anything is sent. */
export function colourError(value) {
  if (!value) return null;
  return COLOUR_PATTERN.test(value)
    ? null
    : "Enter a colour as #RRGGBB, for example #3D37FF.";
}

function Subscription({ organisation }) {
  return (
    <section className="card">
      <h2>Trial and billing</h2>
      <dl className="details">
        <dt>Status</dt>
        <dd data-testid="organisation-status">
          {STATUS_TEXT[organisation.status] || organisation.status}
        </dd>
        {organisation.on_trial ? (
          <>
            <dt>Trial</dt>
            <dd>
              {organisation.days_left_on_trial} days left (ends{" "}
              {formatTime(organisation.trial_ends_at, "—")})
            </dd>
          </>
        ) : null}
        <dt>Subdomain</dt>
        <dd>
          <code>{organisation.subdomain}</code>
        </dd>
      </dl>
      <p className="help">
        To extend the trial or settle billing, contact the operator of this
        portal.
      </p>
    </section>
  );
}

function SettingsForm({ organisation }) {
  const notify = useNotify();
  const update = useUpdateOrganisation();
  const form = useForm({
    name: organisation.name,
    branding: organisation.branding,
    branding_colour: organisation.branding_colour || "",
    user_terms: organisation.user_terms || "",
    require_tls: Boolean(organisation.require_tls),
  });
  const colour = form.values.branding_colour;
  const problem = colourError(colour);
  const shown = problem || !colour ? DEFAULT_BRANDING.mainColour : colour;
  const contrast = colourContrast(shown);
  const save = form.submit(async (values) => {
    const wrong = colourError(values.branding_colour);
    if (wrong) {
      form.setErrors({ branding_colour: [wrong] });
      return;
    }
    await update(organisation.id, {
      ...values,
      branding_colour: values.branding_colour || null,
    });
    notify("Organisation settings saved", { type: "positive" });
  });
  return (
    <form className="card" onSubmit={save} noValidate>
      <h2>Settings</h2>
      <TextField form={form} name="name" label="Name" required />
      <CheckboxField
        form={form}
        name="branding"
        label="Use our branding (logo and colour) on our subdomain"
      />
      <div className="field">
        <label htmlFor="branding-colour-text">
          <span>Branding colour</span>
        </label>
        <div className="colour-row">
          <input
            type="color"
            aria-label="Pick the branding colour"
            value={
              COLOUR_PATTERN.test(colour)
                ? colour.toLowerCase()
                : DEFAULT_BRANDING.mainColour.toLowerCase()
            }
            onChange={(e) =>
              form.setValue("branding_colour", e.target.value.toUpperCase())
            }
          />
          <input
            id="branding-colour-text"
            name="branding_colour"
            aria-describedby="branding-colour-help"
            value={colour}
            placeholder="#1E1E1E"
            maxLength={7}
            aria-invalid={
              problem || form.errors.branding_colour ? true : undefined
            }
            onChange={(e) =>
              form.setValue("branding_colour", e.target.value.trim())
            }
          />
          <span
            className="swatch"
            aria-hidden="true"
            data-testid="colour-preview"
            style={{ background: shown, color: contrast.text }}
          >
            Aa
          </span>
        </div>
        <small className="help" id="branding-colour-help">
          The side menu's background, as #RRGGBB. Empty: the default.{" "}
          {contrast.note}
        </small>
        {contrast.warning && !problem ? (
          <span className="help warning" role="status">
            {contrast.warning}
          </span>
        ) : null}
        {problem || form.errors.branding_colour ? (
          <span className="field-error" role="alert">
            {problem || form.errors.branding_colour.join(" ")}
          </span>
        ) : null}
      </div>
      <CheckboxField
        form={form}
        name="require_tls"
        label="Require TLS: refuse plain FTP passwords (FTPS and SFTP only)"
      />
      <TextareaField
        form={form}
        name="user_terms"
        label="User terms"
        help="Shown to every user under User terms."
      />
      <FormErrors form={form} />
      <div className="actions">
        <button type="submit" disabled={form.busy || Boolean(problem)}>
          Save
        </button>
      </div>
    </form>
  );
}

/** /admin/organisation; `children` are more sections the app puts below (the bans). */
export function OrganisationSettings({ children }) {
  usePageTitle("Organisation settings");
  const { data: organisation, error } = useOrganisation();
  return (
    <>
      <PageHeader title="Organisation settings" />
      {error ? (
        <p className="error">The organisation could not be loaded.</p>
      ) : null}
      {organisation ? (
        <div className="stack">
          <Subscription organisation={organisation} />
          <SettingsForm key={organisation.id} organisation={organisation} />
          <LogoSection organisation={organisation} />
          {children}
        </div>
      ) : null}
    </>
  );
}
