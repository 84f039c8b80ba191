import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const overviewKey = () => queryKey("dashboard/overview/");

/** GET dashboard/overview/: users, active_users, log_count, file_transfers, series, logs, top_users. */
export const getOverview = () => api.get("dashboard/overview/");

export const useOverview = () => useSWR(overviewKey(), getOverview);
