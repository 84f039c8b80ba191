import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

export const updateMailbox = (id, changes) =>
  api.patch(`mailboxes/${id}/`, changes);

export function useUpdateMailbox() {
  const revalidate = useRevalidate();
  return async (id, changes) => {
    const saved = await updateMailbox(id, changes);
    await revalidate("mailboxes/");
    return saved;
  };
}
