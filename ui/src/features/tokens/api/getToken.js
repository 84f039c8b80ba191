import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const tokenKey = (id) => queryKey(`tokens/${id}/`);

export const getToken = (id) => api.get(`tokens/${id}/`);

export const useToken = (id) => useSWR(tokenKey(id), () => getToken(id));
