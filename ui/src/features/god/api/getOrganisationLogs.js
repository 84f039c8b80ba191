import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const organisationLogsKey = (id, params) =>
  queryKey(`god/organisations/${id}/logs/`, params);

/** GET god/organisations/{id}/logs/?search=&action=&protocol=&username=&date_from=&date_to=&page=. */
export const getOrganisationLogs = (id, params) =>
  api.get(`god/organisations/${id}/logs/`, params);

export const useOrganisationLogs = (id, params) =>
  useSWR(organisationLogsKey(id, params), () =>
    getOrganisationLogs(id, params),
  );
