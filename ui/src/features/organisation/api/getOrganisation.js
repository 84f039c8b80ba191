import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const organisationKey = () => queryKey("organisation/");

/** GET organisation/: a list whose first item is the caller's organisation. */
export const getOrganisation = () =>
  api.get("organisation/").then((list) => (list && list[0]) || null);

export const useOrganisation = () => useSWR(organisationKey(), getOrganisation);
