import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey, useRevalidate } from "../../../lib/swr.js";

/** GET bans/: addresses banned for failed sign-ins on this organisation's usernames. */
export const getBans = () => api.get("bans/");

export const useBans = () =>
  useSWR(queryKey("bans/"), getBans, { refreshInterval: 30000 });

/** DELETE bans/{address}/: the address may sign in again at once (audited). */
export const liftBan = (address) =>
  api.delete(`bans/${encodeURIComponent(address)}/`);

export function useLiftBan() {
  const revalidate = useRevalidate();
  return async (address) => {
    await liftBan(address);
    await revalidate("bans/", "logs/");
  };
}
