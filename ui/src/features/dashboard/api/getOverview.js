import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

/** The chart's periods: [value of ?period=, its button, one bar's name]. */
export const PERIODS = [
  ["day", "Days", "Day"],
  ["week", "Weeks", "Week from"],
  ["month", "Months", "Month"],
];
export const DEFAULT_PERIOD = "month";

export const overviewKey = (period = DEFAULT_PERIOD) =>
  queryKey("dashboard/overview/", { period });

/** GET dashboard/overview/?period=: users, active_users, log_count, file_transfers,
 * series (a bar per day, week or month), logs, top_users. */
export const getOverview = (period = DEFAULT_PERIOD) =>
  api.get("dashboard/overview/", { period });

export const useOverview = (period = DEFAULT_PERIOD) =>
  useSWR(overviewKey(period), () => getOverview(period));
