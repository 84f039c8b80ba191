import { backendBase } from "./api.js";

/**
 * Let the browser download a URL of the API (a signed link: no header needed) the
 * way it downloads any link, streaming to disk: the page does not read the bytes.
 */
export function followDownload(url, name) {
  const link = document.createElement("a");
  link.href = new URL(url, backendBase()).toString();
  if (name) link.download = name;
  link.rel = "noopener";
  link.hidden = true;
  document.body.appendChild(link);
  link.click();
  link.remove();
}
