import useSWR from "swr";
import { api } from "../../lib/api.js";
import { queryKey } from "../../lib/swr.js";

/** GET logs/actions/: every action the server writes in the log (the Action filter's
 * choices, from the server's own list so none is missing). */
export const getLogActions = () => api.get("logs/actions/");

export const useLogActions = () =>
  useSWR(queryKey("logs/actions/"), getLogActions, {
    revalidateOnFocus: false,
  });
