import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const sourcesKey = (params) => queryKey("sources/", params);

/** GET sources/?search=&page=: a page of the organisation's sources. */
export const getSources = (params) => api.get("sources/", params);

export const useSources = (params) =>
  useSWR(sourcesKey(params), () => getSources(params));
