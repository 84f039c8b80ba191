import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** POST sources/ {name, type, config, read_only}: the server checks it at once. */
export const createSource = (body) => api.post("sources/", body);

export function useCreateSource() {
  const revalidate = useRevalidate();
  return async (body) => {
    const created = await createSource(body);
    await revalidate("sources/");
    return created;
  };
}
