import { api } from "../../../lib/api.js";

/**
 * POST files/download-link/ {path}: {url, expires_at}, a URL that downloads the file
 * for a minute without the Bearer header, so the browser streams it to disk instead
 * of the tab holding it in memory.
 */
export const createDownloadLink = (path) =>
  api.post("files/download-link/", { path });
