import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

const PARAMS = { page_size: 200 };

export const sourceOptionsKey = () => queryKey("sources/", PARAMS);

/** The organisation's sources, to choose a profile's source from. */
export const getSourceOptions = () =>
  api.get("sources/", PARAMS).then((page) => page.results);

export const useSourceOptions = () =>
  useSWR(sourceOptionsKey(), getSourceOptions);
