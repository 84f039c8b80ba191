import { api } from "../../../lib/api.js";

/** POST profiles/{id}/invite/: mails the person a link to choose their password. */
export const inviteProfile = (id) => api.post(`profiles/${id}/invite/`);
