import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";
import { brandingSubdomain } from "../subdomain.js";

export const brandingKey = (subdomain) => queryKey("branding/", { subdomain });

export const getBranding = (subdomain) => api.get("branding/", { subdomain });

const NONE = { branding: false, branding_logo: null, branding_colour: null };

/**
 * This host's branding. `ready` turns true once the request settles; a failure
 * falls back to no branding silently (console-spec §8).
 */
export function useBranding() {
  const subdomain = brandingSubdomain();
  const { data, error } = useSWR(
    subdomain ? brandingKey(subdomain) : null,
    () => getBranding(subdomain),
    {
      revalidateOnFocus: false,
      shouldRetryOnError: false,
    },
  );
  if (!subdomain) return { ...NONE, ready: true };
  if (error) return { ...NONE, ready: true };
  if (!data) return { ...NONE, ready: false };
  return { ...NONE, ...data, ready: true };
}
