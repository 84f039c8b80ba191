import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const filesKey = (path) => queryKey("files/", { path });

/** GET files/?path=: {path, entries: [{name, type: "dir" | "file", size, modified}]}. */
export const getFiles = (path) => api.get("files/", { path });

export const useFiles = (path) => useSWR(filesKey(path), () => getFiles(path));
