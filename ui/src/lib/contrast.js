// WCAG 2 contrast: relative luminance of an sRGB colour and the ratio of two.
// The text colour of everything in the branding colour (the side menu, the sign-in
// panel, the header and primary buttons) is chosen from it with this, and the
// colour picker warns with it.

export const MIN_CONTRAST = 4.5; // WCAG AA for normal text
export const LIGHT_TEXT = "#FFFFFF";
export const DARK_TEXT = "#191919"; // the brand's dark (console-spec §9)

const HEX = /^#([0-9a-f]{6}|[0-9a-f]{3})$/i;

/** [r, g, b] in 0..255 of #RRGGBB or #RGB, or null. */
export function parseHex(colour) {
  const match = HEX.exec(String(colour || "").trim());
  if (!match) return null;
  let hex = match[1];
  if (hex.length === 3) hex = [...hex].map((c) => c + c).join("");
  return [0, 2, 4].map((i) => parseInt(hex.slice(i, i + 2), 16));
}

/** Relative luminance (WCAG 2), 0 for black to 1 for white. */
export function luminance(colour) {
  const rgb = parseHex(colour);
  if (!rgb) return null;
  const [r, g, b] = rgb.map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** The contrast ratio of two colours, from 1 to 21. */
export function contrastRatio(a, b) {
  const [high, low] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (high + 0.05) / (low + 0.05);
}

/**
 * The text colour to put on `background`: white or the brand's dark, whichever
 * reads better; pure black where neither reaches 4.5:1 (mid-tones). `poor` says
 * that the colour needed that fallback: the colour picker warns about it.
 */
export function textOn(background) {
  if (!parseHex(background))
    return { text: LIGHT_TEXT, ratio: 21, poor: false, dark: false };
  const light = contrastRatio(background, LIGHT_TEXT);
  const dark = contrastRatio(background, DARK_TEXT);
  const best = Math.max(light, dark);
  if (best >= MIN_CONTRAST)
    return light >= dark
      ? { text: LIGHT_TEXT, ratio: light, poor: false, dark: false }
      : { text: DARK_TEXT, ratio: dark, poor: false, dark: true };
  const black = contrastRatio(background, "#000000");
  return light >= black
    ? { text: LIGHT_TEXT, ratio: light, poor: true, dark: false }
    : { text: "#000000", ratio: black, poor: true, dark: true };
}

/** CSS custom properties for a surface in `background`: its text, and the overlays
 * that mark the hovered and current item (towards the background's far side, so they
 * only ever add contrast). */
export function surfaceStyle(background) {
  const { text, dark } = textOn(background);
  return {
    background,
    color: text,
    "--on-brand": text,
    "--on-brand-hover": dark
      ? "rgba(255, 255, 255, 0.3)"
      : "rgba(0, 0, 0, 0.22)",
    "--on-brand-active": dark
      ? "rgba(255, 255, 255, 0.45)"
      : "rgba(0, 0, 0, 0.35)",
  };
}

/** `colour` moved `amount` (0 to 1) of the way towards `target`, as #RRGGBB. */
export function mix(colour, target, amount) {
  const from = parseHex(colour);
  const to = parseHex(target);
  if (!from || !to) return colour;
  const hex = from.map((v, i) =>
    Math.round(v + (to[i] - v) * amount)
      .toString(16)
      .padStart(2, "0"),
  );
  return `#${hex.join("")}`.toUpperCase();
}

/**
 * CSS custom properties that put an organisation's branding colour on the header
 * and on primary buttons (theme.css reads them), each with the text colour that
 * reads on it. Hover moves the colour away from its text (darker under white text,
 * lighter under dark text), so it only ever adds contrast.
 */
export function brandColours(colour) {
  const { text, dark } = textOn(colour);
  return {
    "--button": colour,
    "--on-button": text,
    "--button-hover": dark
      ? mix(colour, LIGHT_TEXT, 0.3)
      : mix(colour, "#000000", 0.2),
    "--header": colour,
    "--on-header": text,
    "--header-hover": dark ? "rgba(255, 255, 255, 0.3)" : "rgba(0, 0, 0, 0.22)",
    "--avatar": text,
    "--on-avatar": colour,
  };
}
