import { describe, expect, it } from "vitest";
import { AXIS_FONT_SIZE, axisTicks } from "./axisTicks.js";

const MONTHS = [
  "Dec 2025", "Jan 2026", "Feb 2026", "Mar 2026", "Apr 2026", "May 2026",
  "Jun 2026", "Jul 2026", "Aug 2026", "Sep 2026", "Oct 2026", "Nov 2026",
]; // prettier-ignore
const DAYS = Array.from({ length: 30 }, (_, i) => `${i + 1} Nov`);

const shown = (labels, width) => {
  const [format] = axisTicks(labels, width);
  return labels.map(format).filter(Boolean);
};

describe("the chart's bar labels", () => {
  it("are at least 12 px", () => {
    expect(AXIS_FONT_SIZE).toBeGreaterThanOrEqual(12);
  });

  it("are whole where there is room", () => {
    expect(shown(MONTHS, 1100)).toEqual(MONTHS);
  });

  it("stack the year under the month on tablets", () => {
    expect(shown(MONTHS, 600)[11]).toBe("Nov\n2026");
    expect(shown(MONTHS, 600)).toHaveLength(12);
  });

  it("thin out on a phone, keeping the latest month", () => {
    const labels = shown(MONTHS, 230); // 390 px less the page's and the card's padding
    expect(labels.length).toBeLessThanOrEqual(6);
    expect(labels.at(-1)).toBe("Nov\n2026");
    expect(230 / labels.length).toBeGreaterThanOrEqual(41); // "2026" at 12 px, and a gap
  });

  it("thin out 30 days so that none overlap, keeping today", () => {
    for (const width of [230, 600, 1100]) {
      const labels = shown(DAYS, width);
      expect(labels.at(-1)).toMatch(/^30(\n| )Nov$/);
      const widest = Math.max(
        ...labels.flatMap((l) => l.split("\n")).map((l) => l.length),
      );
      // each shown label has its bars' room: at least its own width
      expect(width / labels.length).toBeGreaterThanOrEqual(
        widest * 0.6 * AXIS_FONT_SIZE,
      );
    }
  });
});
