import { api } from "../../../lib/api.js";

/** POST files/rename/ {path, new_path}. */
export const renameEntry = (path, newPath) =>
  api.post("files/rename/", { path, new_path: newPath });
