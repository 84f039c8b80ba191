import { api } from "../../../lib/api.js";

/** POST mailboxes/{id}/run/: checks the mailbox now (202; the run shows in the history). */
export const runMailbox = (id) => api.post(`mailboxes/${id}/run/`);
