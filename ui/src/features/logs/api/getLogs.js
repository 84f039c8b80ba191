import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const logsKey = (params) => queryKey("logs/", params);

/** GET logs/?search=&action=&protocol=&username=&date_from=&date_to=&page=: newest first. */
export const getLogs = (params) => api.get("logs/", params);

export const useLogs = (params) =>
  useSWR(logsKey(params), () => getLogs(params));
