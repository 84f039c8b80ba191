import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const organisationKey = (id) => queryKey(`god/organisations/${id}/`);

export const getOrganisation = (id) => api.get(`god/organisations/${id}/`);

export const useOrganisation = (id) =>
  useSWR(organisationKey(id), () => getOrganisation(id));
