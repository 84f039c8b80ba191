import { useEffect, useState } from "react";
import { Link, NavLink, Outlet, useNavigate } from "react-router";
import useSWR from "swr";
import { api, clearSession, getSession } from "../lib/api.js";
import { DOCUMENTATION_URL } from "../config/routes.js";
import { useBranding } from "./branding.js";
import { ConnectDialog } from "../features/connect/ConnectDialog.jsx";

const ADMIN_MENU = [
  ["/fileviewer", "Fileviewer"],
  ["/", "Dashboard"],
  ["/admin/sources", "Sources"],
  ["/admin/profiles", "Profiles"],
  ["/admin/tokens", "API Tokens"],
  ["/admin/mailboxes", "Mailboxes"],
  ["/admin/logs", "Logs"],
];
const USER_MENU = [["/fileviewer", "Fileviewer"]];

export function MainLayout() {
  const session = getSession() || {};
  const navigate = useNavigate();
  const branding = useBranding();
  const [open, setOpen] = useState(window.innerWidth > 1023);
  const [connect, setConnect] = useState(false);
  const [menu, setMenu] = useState(false);
  const { data: information } = useSWR("dashboard/information/");
  const { data: organisations } = useSWR("organisation/");
  const organisation = organisations && organisations[0];
  const welcome = new URLSearchParams(window.location.search).has("welcome");
  useEffect(() => {
    setConnect(welcome);
  }, [welcome]);

  async function logout() {
    const refresh = session.refresh;
    clearSession();
    if (refresh) api.post("token/logout/", { refresh }).catch(() => {});
    navigate("/auth/login");
  }

  const colour = (branding.branding && branding.branding_colour) || "#1E1E1E";
  const hasSource = Boolean(information && information.source);
  return (
    <div className={`shell ${open ? "open-mobile" : "closed"}`}>
      <header className="header">
        <button className="flat" aria-label="Toggle menu" onClick={() => setOpen(!open)}>☰</button>
        <strong>File transfer portal</strong>
        <span className="spacer" />
        <button className={`chip ${hasSource ? "green" : "red"}`} onClick={() => setConnect(true)}>
          How do I connect?
        </button>
        {session.is_admin && organisation && organisation.on_trial ? (
          <Link className="chip trial" to="/admin/organisation">
            {organisation.days_left_on_trial} Days left on trial
          </Link>
        ) : null}
        <div style={{ position: "relative" }}>
          <button className="flat" aria-haspopup="menu" aria-expanded={menu} onClick={() => setMenu(!menu)}>
            {session.username || "Account"} ▾
          </button>
          {menu ? (
            <div role="menu" className="card" style={{ position: "absolute", right: 0, top: "2.4rem", zIndex: 10, minWidth: 220 }}>
              <button role="menuitem" className="flat" onClick={logout}>Logout</button>
              <div><a role="menuitem" href={DOCUMENTATION_URL}>Documentation</a></div>
              {session.is_admin ? (
                <div><Link role="menuitem" to="/admin/organisation" onClick={() => setMenu(false)}>Organisation settings</Link></div>
              ) : null}
              <div><Link role="menuitem" to="/user-terms" onClick={() => setMenu(false)}>User terms</Link></div>
            </div>
          ) : null}
        </div>
      </header>
      <aside className="side" style={{ background: colour }}>
        <nav aria-label="Main">
          {(session.is_admin ? ADMIN_MENU : USER_MENU).map(([to, label]) => (
            <NavLink key={to} to={to} end={to === "/"}>
              {label}
            </NavLink>
          ))}
        </nav>
      </aside>
      <main className="content">
        <Outlet />
      </main>
      {connect ? <ConnectDialog information={information} onClose={() => setConnect(false)} /> : null}
    </div>
  );
}
