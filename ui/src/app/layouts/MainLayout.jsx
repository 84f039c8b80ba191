import { useState } from "react";
import { Outlet, useNavigate, useNavigation } from "react-router";
import {
  DEFAULT_BRANDING,
  DRAWER_BREAKPOINT,
  PRODUCT_NAME,
} from "../../config/brand.js";
import { getSession } from "../../lib/api.js";
import { logout } from "../../features/auth/api/logout.js";
import { useBranding } from "../../features/branding/api/getBranding.js";
import { ConnectChip } from "../../features/connect/components/ConnectChip.jsx";
import { SettingsWarning } from "../../features/god/components/SettingsWarning.jsx";
import { useOrganisation } from "../../features/organisation/api/getOrganisation.js";
import { TrialChip } from "../../features/organisation/components/TrialChip.jsx";
import { ScrollReset } from "../ScrollReset.jsx";
import { SideMenu } from "./SideMenu.jsx";
import { useBrandColours } from "./useBrandColours.js";
import { UserMenu } from "./UserMenu.jsx";
import { useMediaQuery } from "./useMediaQuery.js";

/**
 * The main layout's colour and logo: this host's branding, else the signed-in
 * organisation's. `brandColour`: the organisation's own colour, which the header
 * and primary buttons take too (null: they keep the defaults).
 */
export function mainBranding(hostBranding, organisation) {
  const branded = [hostBranding, organisation].find((b) => b && b.branding);
  if (branded) {
    return {
      colour: branded.branding_colour || DEFAULT_BRANDING.mainColour,
      logo: branded.branding_logo || null,
      brandColour: branded.branding_colour || null,
    };
  }
  return { colour: DEFAULT_BRANDING.mainColour, logo: null, brandColour: null };
}

/** Header, side menu in the branding colour (header and primary buttons too, when the
 * organisation has one), content; below 1024 px the menu is a drawer. */
export function MainLayout() {
  const session = getSession() || {};
  const navigate = useNavigate();
  const navigation = useNavigation();
  const narrow = useMediaQuery(`(max-width: ${DRAWER_BREAKPOINT}px)`);
  const [menuOpen, setMenuOpen] = useState(true); // wide screens: the menu is shown until toggled off
  const [drawerOpen, setDrawerOpen] = useState(false); // narrow screens: the drawer starts closed
  const hostBranding = useBranding();
  const { data: organisation } = useOrganisation();
  const { colour, logo, brandColour } = mainBranding(
    hostBranding,
    organisation,
  );
  useBrandColours(brandColour);
  const open = narrow ? drawerOpen : menuOpen;
  // two chips do not fit a phone's header beside the toggle and the user menu
  const twoChips = Boolean(
    session.is_admin && organisation && organisation.on_trial,
  );

  function signOut() {
    logout();
    navigate("/auth/login");
  }

  return (
    <div
      className={`shell ${narrow ? "narrow" : "wide"} ${open ? "menu-open" : "menu-closed"} ${twoChips ? "two-chips" : ""}`}
    >
      <ScrollReset />
      <a
        className="skip-link"
        href="#main"
        onClick={(event) => {
          event.preventDefault(); // focus, not a hash change the router would see
          const main = document.getElementById("main");
          if (main) {
            main.focus();
            main.scrollIntoView();
          }
        }}
      >
        Skip to main content
      </a>
      <header className="header">
        <button
          className="flat icon"
          aria-label="Toggle menu"
          aria-expanded={open}
          onClick={() =>
            narrow ? setDrawerOpen(!drawerOpen) : setMenuOpen(!menuOpen)
          }
        >
          ☰
        </button>
        <strong className="product">{PRODUCT_NAME}</strong>
        <span className="spacer" />
        <div className="header-chips">
          <ConnectChip />
          {session.is_admin ? <TrialChip /> : null}
        </div>
        <UserMenu session={session} onLogout={signOut} />
      </header>
      <SideMenu
        session={session}
        colour={colour}
        logo={logo}
        onNavigate={() => setDrawerOpen(false)}
      />
      {narrow && drawerOpen ? (
        <div
          className="drawer-backdrop"
          aria-hidden="true"
          onClick={() => setDrawerOpen(false)}
        />
      ) : null}
      <main
        id="main"
        tabIndex={-1}
        className="content"
        data-scroll-pane
        aria-busy={navigation.state === "loading"}
      >
        {navigation.state === "loading" ? (
          <div className="loading-bar" aria-hidden="true" />
        ) : null}
        <SettingsWarning operator={Boolean(session.is_superuser)} />
        <Outlet />
      </main>
    </div>
  );
}
