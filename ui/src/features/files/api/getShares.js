import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const sharesKey = (params) => queryKey("shares/", params);

/** GET shares/?page=: the caller's share links (an admin's: the organisation's), never their tokens. */
export const getShares = (params) => api.get("shares/", params);

export const useShares = (params) =>
  useSWR(sharesKey(params), () => getShares(params));
