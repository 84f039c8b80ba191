import { useEffect } from "react";
import { brandColours } from "../../lib/contrast.js";

/**
 * Put an organisation's branding colour (or none: the defaults) on the header and
 * primary buttons, with readable text: on the page's root, so dialogs and menus
 * opened from anywhere have it too; taken off again when the layout goes.
 */
export function useBrandColours(colour) {
  useEffect(() => {
    if (!colour) return undefined;
    const root = document.documentElement;
    const colours = brandColours(colour);
    for (const [name, value] of Object.entries(colours))
      root.style.setProperty(name, value);
    return () => {
      for (const name of Object.keys(colours)) root.style.removeProperty(name);
    };
  }, [colour]);
}
