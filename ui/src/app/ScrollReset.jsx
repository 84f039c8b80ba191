import { useEffect } from "react";
import { useLocation } from "react-router";

/** Navigation resets scroll to the top (console-spec §2): the window and any scrolling pane. */
export function ScrollReset() {
  const { pathname } = useLocation();
  useEffect(() => {
    window.scrollTo(0, 0);
    for (const pane of document.querySelectorAll("[data-scroll-pane]"))
      pane.scrollTop = 0;
  }, [pathname]);
  return null;
}
