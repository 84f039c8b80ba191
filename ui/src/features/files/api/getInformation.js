import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";
import { refusals } from "../components/refusals.js";

/** GET dashboard/information/ (the connect dialog's call, the same SWR key): what the
 * signed-in user may do here, as {action: why not | null} for the file viewer's buttons. */
export function useRefusals() {
  const { data } = useSWR(queryKey("dashboard/information/"), () =>
    api.get("dashboard/information/"),
  );
  return refusals(data);
}
