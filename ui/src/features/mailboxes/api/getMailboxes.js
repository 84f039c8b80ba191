import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const mailboxesKey = (params) => queryKey("mailboxes/", params);

/** GET mailboxes/?search=&page=: the organisation's mailboxes with their last run. */
export const getMailboxes = (params) => api.get("mailboxes/", params);

export const useMailboxes = (params) =>
  useSWR(mailboxesKey(params), () => getMailboxes(params));
