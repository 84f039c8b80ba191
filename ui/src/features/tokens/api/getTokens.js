import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const tokensKey = (params) => queryKey("tokens/", params);

/**
 * A search as sent: a whole token pasted in is cut down to its prefix (`apl_<prefix>`),
 * so its secret never travels in a URL (nor lands in an access log).
 */
export function tokenSearch(search) {
  const pasted = /^\s*(apl_[^_\s]+)_/.exec(search || "");
  return pasted ? pasted[1] : search;
}

/** GET tokens/?search=&page=: the organisation's API tokens (never their secrets). */
export const getTokens = (params) =>
  api.get(
    "tokens/",
    params && params.search
      ? { ...params, search: tokenSearch(params.search) }
      : params,
  );

export const useTokens = (params) =>
  useSWR(tokensKey(params), () => getTokens(params));
