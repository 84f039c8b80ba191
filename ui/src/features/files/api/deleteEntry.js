import { api } from "../../../lib/api.js";

/** DELETE files/?path=: a file, or a folder with everything in it. */
export const deleteEntry = (path) => api.delete("files/", { path });
