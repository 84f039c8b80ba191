import { api } from "../../../lib/api.js";

/**
 * POST files/mkdir/ {path, parents}. With `parents` (a dropped folder tree) a
 * folder that is there already is fine; without (the "New folder" dialog) the
 * appliance refuses a name that is taken.
 */
export const createFolder = (path, { parents = true } = {}) =>
  api.post("files/mkdir/", { path, parents });
