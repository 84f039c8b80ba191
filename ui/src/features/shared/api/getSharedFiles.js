import useSWR from "swr";
import { request } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

const path_ = (token) => `shared/${encodeURIComponent(token)}/files/`;

export const sharedFilesKey = (token, path, access) =>
  queryKey(path_(token), { path, access });

/** GET shared/{token}/files/?path=: a folder inside a shared folder. */
export const getSharedFiles = (token, path, access) =>
  request("GET", path_(token), { params: { path, access }, anonymous: true });

export const useSharedFiles = (token, path, access, enabled) =>
  useSWR(
    enabled ? sharedFilesKey(token, path, access) : null,
    () => getSharedFiles(token, path, access),
    {
      revalidateOnFocus: false,
    },
  );
