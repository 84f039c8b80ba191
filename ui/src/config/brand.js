// Constants of console-spec §9 that the code needs (the CSS has the same colours).
import { paths } from "./routes.js";

export const BRAND_COLOURS = {
  primary: "#3D37FF",
  secondary: "#26A69A",
  accent: "#504BFF",
  dark: "#191919",
  darkPage: "#111111",
  positive: "#22992E",
  negative: "#C52A1A",
  info: "#31CCEC",
  warning: "#FFBF1F",
  select: "#cce7ff",
};

/** Branding when none is set: no logo, these colours (main layout, auth layout). */
export const DEFAULT_BRANDING = {
  branding: false,
  branding_logo: null,
  mainColour: "#1E1E1E",
  authColour: "#2f3033",
};

export const PRODUCT_NAME = "File transfer portal";
export const DRAWER_BREAKPOINT = 1023; // px: at this width and below the side menu is a drawer
export const DOCUMENTATION_URL = paths.docs; // the console's own page: user menu, welcome and connect dialogs
export const SFTP_PORT = 22;
export const FTP_PORT = 21;
export const COLOUR_PATTERN = /^#[0-9A-Fa-f]{6}$/;
