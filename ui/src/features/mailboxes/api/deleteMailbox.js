import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

export const deleteMailbox = (id) => api.delete(`mailboxes/${id}/`);

export function useDeleteMailbox() {
  const revalidate = useRevalidate();
  return async (id) => {
    await deleteMailbox(id);
    await revalidate("mailboxes/");
  };
}
