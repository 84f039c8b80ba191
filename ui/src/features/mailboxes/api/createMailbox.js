import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** POST mailboxes/: the server checks that the host resolves before saving. */
export const createMailbox = (body) => api.post("mailboxes/", body);

export function useCreateMailbox() {
  const revalidate = useRevalidate();
  return async (body) => {
    const created = await createMailbox(body);
    await revalidate("mailboxes/");
    return created;
  };
}
