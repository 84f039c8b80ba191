import { Outlet } from "react-router";
import { useBranding } from "./branding.js";

export function AuthLayout() {
  const branding = useBranding();
  if (!branding.ready) return null; // hidden until the branding request settles
  const colour = (branding.branding && branding.branding_colour) || "#2f3033";
  return (
    <div className="auth">
      <aside className="auth-panel" style={{ background: colour }}>
        {branding.branding && branding.branding_logo ? (
          <img src={branding.branding_logo} alt="Logo" style={{ maxWidth: "60%" }} />
        ) : (
          <div>
            <h1>File transfer portal</h1>
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
