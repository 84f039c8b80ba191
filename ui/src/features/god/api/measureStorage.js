import { api } from "../../../lib/api.js";
import { useRevalidate } from "../../../lib/swr.js";

/** POST god/organisations/{id}/storage/: measure the organisation's storage now. */
export const measureStorage = (id) =>
  api.post(`god/organisations/${id}/storage/`);

export function useMeasureStorage() {
  const revalidate = useRevalidate();
  return async (id) => {
    const measured = await measureStorage(id);
    await revalidate("god/organisations/");
    return measured;
  };
}
