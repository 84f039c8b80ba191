import { Link } from "react-router";
import { MenuButton } from "../../components/MenuButton.jsx";
import { DOCUMENTATION_URL } from "../../config/brand.js";

/** The user menu: Logout, Documentation, Organisation settings (admins), User terms. */
export function UserMenu({ session, onLogout }) {
  return (
    <MenuButton
      boxClassName="user-menu"
      label={
        <>
          <span className="avatar" aria-hidden="true">
            {(session.username || "?").slice(0, 1).toUpperCase()}
          </span>
          <span className="user-name">{session.username || "Account"}</span>{" "}
          <span aria-hidden="true">▾</span>
        </>
      }
      items={(close) => (
        <>
          <button
            role="menuitem"
            tabIndex={-1}
            className="flat"
            onClick={() => {
              close(false);
              onLogout();
            }}
          >
            Logout
          </button>
          <a
            role="menuitem"
            tabIndex={-1}
            href={DOCUMENTATION_URL}
            target="_blank"
            rel="noreferrer"
            onClick={() => close()}
          >
            Documentation
          </a>
          {session.is_admin ? (
            <Link
              role="menuitem"
              tabIndex={-1}
              to="/admin/organisation"
              onClick={() => close(false)}
            >
              Organisation settings
            </Link>
          ) : null}
          <Link
            role="menuitem"
            tabIndex={-1}
            to="/user-terms"
            onClick={() => close(false)}
          >
            User terms
          </Link>
        </>
      )}
    />
  );
}
