import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const profileKey = (id) => queryKey(`profiles/${id}/`);

export const getProfile = (id) => api.get(`profiles/${id}/`);

export const useProfile = (id) => useSWR(profileKey(id), () => getProfile(id));
