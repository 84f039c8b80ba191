import { Link } from "react-router";
import { paths } from "../../../config/routes.js";
import { useApplianceSettings } from "../api/getApplianceSettings.js";
import { SETTING_SECTIONS } from "./applianceSettings.js";

/**
 * The operator's banner on every screen while the public host name is a name
 * nobody else reaches (localhost) or outbound mail is not set up, each with a link
 * to where it is set. Nobody else is asked or shown anything.
 */
export function SettingsWarning({ operator }) {
  const { data } = useApplianceSettings(Boolean(operator));
  const warnings = (operator && data && data.warnings) || [];
  if (!warnings.length) return null;
  return (
    <section
      className="settings-warning"
      aria-label="Appliance settings to finish"
      data-testid="settings-warning"
    >
      {warnings.map((warning) => {
        const section = SETTING_SECTIONS[warning.setting];
        return (
          <p key={warning.setting}>
            {warning.message}{" "}
            {section ? (
              <Link to={`${paths.god}#${section.anchor}`}>{section.link}</Link>
            ) : null}
          </p>
        );
      })}
    </section>
  );
}
