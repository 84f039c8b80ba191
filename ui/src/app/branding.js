import { useEffect, useState } from "react";
import { api } from "../lib/api.js";

/** The subdomain to load branding for: the first host label unless app/localhost, or ?branding=. */
export function brandingSubdomain(location = window.location) {
  const override = new URLSearchParams(location.search).get("branding");
  if (override) return override;
  const first = location.hostname.split(".")[0];
  if (!first || first === "app" || first === "localhost" || /^\d+$/.test(first)) return null;
  return first;
}

/** Branding for this host; `ready` turns true when the request settles (failures fall back silently). */
export function useBranding() {
  const [state, setState] = useState({ ready: false, branding: false, branding_logo: null, branding_colour: null });
  useEffect(() => {
    const subdomain = brandingSubdomain();
    if (!subdomain) {
      setState((s) => ({ ...s, ready: true }));
      return;
    }
    api
      .get("branding/", { subdomain })
      .then((data) => setState({ ready: true, ...data }))
      .catch(() => setState((s) => ({ ...s, ready: true })));
  }, []);
  return state;
}
