// The chart's bar labels for the width it has: whole ("Nov 2026", "28 Nov") where
// there is room, in two lines ("Nov" over "2026") where there is less, and only
// every second, third... label where even that would overlap, keeping the latest.

export const AXIS_FONT_SIZE = 12; // px: readable (the labels were 10 px, looking like 9)
const CHARACTER = 0.6 * AXIS_FONT_SIZE; // px a character takes, about, in a sans-serif
const GAP = 12; // px between two labels

const width = (text) => String(text).length * CHARACTER + GAP;
const stacked = (label) => String(label).replace(" ", "\n");

/** [format(label, index) → text, labels shown] for `labels` over `plotWidth` px. */
export function axisTicks(labels, plotWidth) {
  const count = labels.length;
  const each = plotWidth / Math.max(count, 1);
  const whole = Math.max(0, ...labels.map(width));
  if (each >= whole) return [(label) => label, count];
  const lines = Math.max(
    0,
    ...labels.flatMap((label) => stacked(label).split("\n").map(width)),
  );
  const step = Math.ceil(lines / each);
  if (step <= 1) return [stacked, count];
  // keep the latest bar's label, then every `step`-th before it
  const format = (label, i) =>
    (count - 1 - i) % step === 0 ? stacked(label) : "";
  return [format, Math.ceil(count / step)];
}
