import { NavLink } from "react-router";
import { surfaceStyle } from "../../lib/contrast.js";

// console-spec §2: admins see these, other users the file viewer only.
export const ADMIN_MENU = [
  ["/fileviewer", "Fileviewer"],
  ["/", "Dashboard"],
  ["/admin/sources", "Sources"],
  ["/admin/profiles", "Profiles"],
  ["/admin/tokens", "API Tokens"],
  ["/admin/mailboxes", "Mailboxes"],
  ["/admin/logs", "Logs"],
];
export const USER_MENU = [["/fileviewer", "Fileviewer"]];
export const OPERATOR_MENU = [["/admin/god", "Organisations"]];

/** The menu items for a session's role (the operator also gets the organisations screen). */
export function menuFor(session) {
  if (!session || !session.is_admin) return USER_MENU;
  return session.is_superuser ? [...ADMIN_MENU, ...OPERATOR_MENU] : ADMIN_MENU;
}

/** The side menu on the branding colour, its text white or dark, whichever reads (WCAG 4.5:1). */
export function SideMenu({ session, colour, logo, onNavigate }) {
  return (
    <aside
      className="side"
      style={surfaceStyle(colour)}
      data-testid="side-menu"
    >
      <div className="side-inner">
        {logo ? <img className="side-logo" src={logo} alt="Logo" /> : null}
        <nav aria-label="Main">
          {menuFor(session).map(([to, label]) => (
            <NavLink key={to} to={to} end={to === "/"} onClick={onNavigate}>
              {label}
            </NavLink>
          ))}
        </nav>
      </div>
    </aside>
  );
}
