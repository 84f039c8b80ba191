import { Outlet } from "react-router";
import { DEFAULT_BRANDING, PRODUCT_NAME } from "../../config/brand.js";
import { useBranding } from "../../features/branding/api/getBranding.js";
import { surfaceStyle } from "../../lib/contrast.js";
import { ScrollReset } from "../ScrollReset.jsx";
import { useBrandColours } from "./useBrandColours.js";

/** Centred card with a branded left panel; hidden until the branding request settles. */
export function AuthLayout() {
  const branding = useBranding();
  const brandColour = (branding.branding && branding.branding_colour) || null;
  useBrandColours(branding.ready ? brandColour : null); // the Sign in button too
  if (!branding.ready) return <div className="auth" aria-busy="true" />;
  const colour = brandColour || DEFAULT_BRANDING.authColour;
  return (
    <div className="auth">
      <ScrollReset />
      <aside
        className="auth-panel"
        style={surfaceStyle(colour)}
        data-testid="auth-panel"
      >
        {branding.branding && branding.branding_logo ? (
          <img className="auth-logo" src={branding.branding_logo} alt="Logo" />
        ) : (
          <div>
            <h1 className="brand-name">{PRODUCT_NAME}</h1>
            <p>Move files by SFTP, FTP or this web page, with one password.</p>
          </div>
        )}
      </aside>
      <main className="auth-content">
        <Outlet />
      </main>
    </div>
  );
}
