import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/**
 * POST sources/callback/ with what the provider sent back ({code, state} or
 * {error, error_description, state}): the source, signed in and checked.
 */
export const finishSignIn = (body) => api.post("sources/callback/", body);

export function useFinishSignIn() {
  const revalidate = useRevalidate();
  return async (body) => {
    const source = await finishSignIn(body);
    await revalidate("sources/");
    return source;
  };
}
