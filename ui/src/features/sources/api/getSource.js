import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const sourceKey = (id) => queryKey(`sources/${id}/`);

export const getSource = (id) => api.get(`sources/${id}/`);

export const useSource = (id) => useSWR(sourceKey(id), () => getSource(id));
