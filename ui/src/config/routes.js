export const routes = {
  login: "/auth/login",
  register: "/auth/register",
  forgot: "/auth/forgot-password",
  billing: "/auth/billing",
  shared: "/auth/shared",
  dashboard: "/",
  files: "/fileviewer",
  organisation: "/admin/organisation",
  userTerms: "/user-terms",
};
export const DOCUMENTATION_URL = "/docs/";
export const DEFAULT_BRANDING = { branding: false, branding_logo: null, main: "#1E1E1E", auth: "#2f3033" };
