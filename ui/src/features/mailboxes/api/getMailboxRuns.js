import useSWR from "swr";
import { api } from "../../../lib/api.js";
import { queryKey } from "../../../lib/swr.js";

export const mailboxRunsKey = (id, params) =>
  queryKey(`mailboxes/${id}/runs/`, params);

/** GET mailboxes/{id}/runs/?page=: the mailbox's runs, newest first. */
export const getMailboxRuns = (id, params) =>
  api.get(`mailboxes/${id}/runs/`, params);

export const useMailboxRuns = (id, params, options) =>
  useSWR(mailboxRunsKey(id, params), () => getMailboxRuns(id, params), options);
