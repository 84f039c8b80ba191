import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

/**
 * GET god/settings/: the public host name and outbound mail as they apply now,
 * {server: {public_hostname}, smtp: {host, port, starttls, sender, username,
 * password}, warnings}; each setting {value (the password: set), source,
 * editable, set_by}.
 */
export const getApplianceSettings = () => api.get("god/settings/");

/** The settings; nothing is asked when `enabled` is false (anyone but the operator). */
export const useApplianceSettings = (enabled = true) =>
  useSWR(enabled ? queryKey("god/settings/") : null, getApplianceSettings);
