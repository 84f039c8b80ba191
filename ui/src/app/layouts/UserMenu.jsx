import { useEffect, useRef, useState } from "react";
import { Link } from "react-router";
import { DOCUMENTATION_URL } from "../../config/brand.js";

/** The user menu: Logout, Documentation, Organisation settings (admins), User terms. */
export function UserMenu({ session, onLogout }) {
  const [open, setOpen] = useState(false);
  const box = useRef(null);
  useEffect(() => {
    if (!open) return undefined;
    const close = (event) => {
      if (
        event.type === "keydown"
          ? event.key === "Escape"
          : !box.current.contains(event.target)
      )
        setOpen(false);
    };
    document.addEventListener("mousedown", close);
    document.addEventListener("keydown", close);
    return () => {
      document.removeEventListener("mousedown", close);
      document.removeEventListener("keydown", close);
    };
  }, [open]);
  const done = () => setOpen(false);
  return (
    <div className="user-menu" ref={box}>
      <button
        className="flat"
        aria-haspopup="menu"
        aria-expanded={open}
        onClick={() => setOpen(!open)}
      >
        <span className="avatar" aria-hidden="true">
          {(session.username || "?").slice(0, 1).toUpperCase()}
        </span>
        <span className="user-name">{session.username || "Account"}</span> ▾
      </button>
      {open ? (
        <div role="menu" className="menu">
          <button role="menuitem" className="flat" onClick={onLogout}>
            Logout
          </button>
          <a
            role="menuitem"
            href={DOCUMENTATION_URL}
            target="_blank"
            rel="noreferrer"
            onClick={done}
          >
            Documentation
          </a>
          {session.is_admin ? (
            <Link role="menuitem" to="/admin/organisation" onClick={done}>
              Organisation settings
            </Link>
          ) : null}
          <Link role="menuitem" to="/user-terms" onClick={done}>
            User terms
          </Link>
        </div>
      ) : null}
    </div>
  );
}
