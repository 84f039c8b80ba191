import { api } from "../../../lib/api.js";

/** POST files/mkdir/ {path, parents}. */
export const createFolder = (path) =>
  api.post("files/mkdir/", { path, parents: true });
