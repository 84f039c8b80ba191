import { useEffect } from "react";
import { useLocation } from "react-router";

/**
 * Scroll the element `id` into view when the address's hash names it (the
 * warning banner's links), once `ready` (its content loaded).
 */
export function useScrollToHash(id, ready) {
  const { hash } = useLocation();
  useEffect(() => {
    if (!ready || hash !== `#${id}`) return undefined;
    // after the layout's scroll reset of a navigation, whose effect runs after this one
    const timer = setTimeout(() => {
      const element = document.getElementById(id);
      if (element && element.scrollIntoView) element.scrollIntoView();
    }, 0);
    return () => clearTimeout(timer);
  }, [id, ready, hash]);
}
