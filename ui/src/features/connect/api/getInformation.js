import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const informationKey = () => queryKey("dashboard/information/");

/** GET dashboard/information/: source, hostname, username, ports, host keys. */
export const getInformation = () => api.get("dashboard/information/");

export const useInformation = () => useSWR(informationKey(), getInformation);
