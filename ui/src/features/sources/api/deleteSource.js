import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/**
 * DELETE sources/{id}/: a local source's files are kept (its folder stays the
 * organisation's) unless `files` is "delete", the only value sent (?files=delete).
 */
export const deleteSource = (id, files) =>
  api.delete(`sources/${id}/`, files === "delete" ? { files } : undefined);

export function useDeleteSource() {
  const revalidate = useRevalidate();
  return async (id, files) => {
    try {
      await deleteSource(id, files);
    } finally {
      // refused or not, the list and the page show what is: a source whose files could
      // not all be removed (a 503) is deleted all the same
      await revalidate("sources/");
    }
  };
}
