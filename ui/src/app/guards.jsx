import { Navigate, Outlet, useLocation } from "react-router";
import { getSession } from "../lib/api.js";

/**
 * Where a main-layout route sends the caller instead of rendering it, or null:
 * no session → /auth/login; a non-admin at / → /fileviewer; a non-admin in
 * /admin/* → /fileviewer; the operator's screens need a superuser.
 */
export function guardRedirect(session, pathname) {
  if (!session || !session.access) return "/auth/login";
  if (
    !session.is_admin &&
    (pathname === "/" || pathname === "" || pathname.startsWith("/admin"))
  ) {
    return "/fileviewer";
  }
  if (pathname.startsWith("/admin/god") && !session.is_superuser) return "/";
  return null;
}

/** Main-layout routes need a signed-in user (and the role the route is for). */
export function RequireSession() {
  const location = useLocation();
  const target = guardRedirect(getSession(), location.pathname);
  if (target) {
    const state =
      target === "/auth/login"
        ? { from: location.pathname + location.search }
        : undefined;
    return <Navigate to={target} replace state={state} />;
  }
  return <Outlet />;
}
