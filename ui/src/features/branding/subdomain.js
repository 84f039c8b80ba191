// Which organisation's branding to load (console-spec §4): the host name's first
// label unless it is 'app' or 'localhost' (or an IP address), or ?branding=NAME,
// which overrides it for the rest of the tab's visit.
const OVERRIDE_KEY = "brandingOverride";

export function brandingSubdomain(
  location = window.location,
  storage = window.sessionStorage,
) {
  const override = new URLSearchParams(location.search).get("branding");
  if (override) {
    try {
      storage.setItem(OVERRIDE_KEY, override);
    } catch {
      // storage may be unavailable (private mode): the override holds for this page only
    }
    return override;
  }
  let remembered;
  try {
    remembered = storage.getItem(OVERRIDE_KEY);
  } catch {
    remembered = null;
  }
  if (remembered) return remembered;
  const host = location.hostname || "";
  if (/^[\d.]+$/.test(host) || host.includes(":")) return null; // an IPv4 or IPv6 address
  const first = host.split(".")[0];
  if (!first || first === "app" || first === "localhost") return null;
  return first;
}
