import useSWR from "swr";
import { request } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

const base = (token) => `shared/${encodeURIComponent(token)}/`;

export const sharedLinkKey = (token, access) =>
  queryKey(base(token), { access });

/**
 * GET shared/{token}/: {name, kind, size, expires_at, upload_only, password_required,
 * unlocked, downloads_left, shared_by}. Without sign-in.
 */
export const getSharedLink = (token, access) =>
  request("GET", base(token), { params: { access }, anonymous: true });

export const useSharedLink = (token, access) =>
  useSWR(
    token ? sharedLinkKey(token, access) : null,
    () => getSharedLink(token, access),
    {
      revalidateOnFocus: false,
    },
  );
