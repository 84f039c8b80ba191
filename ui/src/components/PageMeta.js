import { useEffect } from "react";
import { PRODUCT_NAME } from "../config/brand.js";

/** Page meta: the document title of a screen ("Profiles · File transfer portal"). */
export function pageTitle(title) {
  return title ? `${title} · ${PRODUCT_NAME}` : PRODUCT_NAME;
}

export function usePageTitle(title) {
  useEffect(() => {
    document.title = pageTitle(title);
  }, [title]);
}
