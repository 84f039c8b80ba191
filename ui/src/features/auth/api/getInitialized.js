import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const initializedKey = () => queryKey("initialized/");

export const getInitialized = () => api.get("initialized/");

/** Whether the appliance is set up; a failed check counts as set up (the sign-in form shows). */
export function useInitialized() {
  const { data, error } = useSWR(initializedKey(), getInitialized, {
    revalidateOnFocus: false,
  });
  if (error) return true;
  return data ? Boolean(data.initialized) : null;
}
