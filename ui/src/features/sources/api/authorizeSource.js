import { api } from "../../../lib/api.js";

/** POST sources/{id}/authorize/: {url} of the provider's sign-in page (with state and PKCE) and the redirect_uri. */
export const authorizeSource = (id) => api.post(`sources/${id}/authorize/`);
