import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

/** GET god/mail/: where outbound mail goes, its last delivery and its last error. */
export const getMailState = () => api.get("god/mail/");

export const useMailState = () => useSWR(queryKey("god/mail/"), getMailState);
