import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const profilesKey = (params) => queryKey("profiles/", params);

/** GET profiles/?search=&page=: a page of the organisation's profiles. */
export const getProfiles = (params) => api.get("profiles/", params);

export const useProfiles = (params) =>
  useSWR(profilesKey(params), () => getProfiles(params));
