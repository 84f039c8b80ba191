import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const foldersKey = (params) => queryKey("god/folders/", params);

/**
 * GET god/folders/?page=: every local folder with its organisation ({id, name,
 * subdomain, status}), its source or the reservation kept after its source was
 * deleted ({id, since, source}), and the other organisations whose folders overlap it.
 */
export const getFolders = (params) => api.get("god/folders/", params);

export const useFolders = (params) =>
  useSWR(foldersKey(params), () => getFolders(params));
