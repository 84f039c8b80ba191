import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey, useRevalidate } from "../../../lib/swr.js";

/** GET bans/: bans earned guessing this organisation's usernames or share links. */
export const getBans = () => api.get("bans/");

export const useBans = () =>
  useSWR(queryKey("bans/"), getBans, { refreshInterval: 30000 });

/** DELETE bans/{address}/: lifts the address's bans shown in bans/ (audited). */
export const liftBan = (address) =>
  api.delete(`bans/${encodeURIComponent(address)}/`);

export function useLiftBan() {
  const revalidate = useRevalidate();
  return async (address) => {
    await liftBan(address);
    await revalidate("bans/", "logs/");
  };
}
