import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const mailboxKey = (id) => queryKey(`mailboxes/${id}/`);

export const getMailbox = (id) => api.get(`mailboxes/${id}/`);

export const useMailbox = (id) => useSWR(mailboxKey(id), () => getMailbox(id));
