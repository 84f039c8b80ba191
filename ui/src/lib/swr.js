import { useSWRConfig } from "swr";

/** The SWR key of a GET: the API path, and its query parameters when there are any. */
export const queryKey = (path, params) => (params ? [path, params] : [path]);

/** A function that refetches every cached GET whose path starts with one of the prefixes. */
export function useRevalidate() {
  const { mutate } = useSWRConfig();
  return (...prefixes) =>
    mutate(
      (key) =>
        Array.isArray(key) &&
        typeof key[0] === "string" &&
        prefixes.some((prefix) => key[0].startsWith(prefix)),
    );
}
