import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** POST tokens/ {name, scopes, expires_at}: the reply's `token` is the secret, shown this once. */
export const createToken = (body) => api.post("tokens/", body);

export function useCreateToken() {
  const revalidate = useRevalidate();
  return async (body) => {
    const created = await createToken(body);
    await revalidate("tokens/");
    return created;
  };
}
