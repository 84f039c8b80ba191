import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/**
 * PATCH god/settings/ {server?: {public_hostname}, smtp?: {host, port, starttls,
 * sender, username, password}}: the settings as they apply from now on (null: back
 * to the default; a password left out is kept).
 */
export const updateApplianceSettings = (changes) =>
  api.patch("god/settings/", changes);

export function useUpdateApplianceSettings() {
  const revalidate = useRevalidate();
  return async (changes) => {
    const saved = await updateApplianceSettings(changes);
    // the warning banner, the mail state and "How do I connect?" read them too
    await revalidate("god/settings/", "god/mail/", "dashboard/information/");
    return saved;
  };
}
