import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const organisationsKey = (params) =>
  queryKey("god/organisations/", params);

/** GET god/organisations/?search=&page=: every organisation with its status, trial and users. */
export const getOrganisations = (params) =>
  api.get("god/organisations/", params);

export const useOrganisations = (params) =>
  useSWR(organisationsKey(params), () => getOrganisations(params));
