// The chart's month labels for the width it has: "Nov 2026" where there is room,
// "Nov" over "2026" where there is less, and every second or third month on a
// phone, so that labels never overlap.

const FULL = 62; // px a "Nov 2026" label needs at the axis' font size
const STACKED = 34; // px "Nov" over "2026" needs

/** [format(label, index) → text, labels shown] for `count` months over `plotWidth` px. */
export function monthTicks(count, plotWidth) {
  const each = plotWidth / Math.max(count, 1);
  if (each >= FULL) return [(label) => label, count];
  const step = Math.ceil(STACKED / each);
  const stacked = (label) => String(label).replace(" ", "\n");
  if (step <= 1) return [stacked, count];
  // keep the latest month, then every `step`-th before it
  const format = (label, i) =>
    (count - 1 - i) % step === 0 ? stacked(label) : "";
  return [format, Math.ceil(count / step)];
}
