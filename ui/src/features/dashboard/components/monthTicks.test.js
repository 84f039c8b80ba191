import { describe, expect, it } from "vitest";
import { monthTicks } from "./monthTicks.js";

const MONTHS = [
  "Dec 2025", "Jan 2026", "Feb 2026", "Mar 2026", "Apr 2026", "May 2026",
  "Jun 2026", "Jul 2026", "Aug 2026", "Sep 2026", "Oct 2026", "Nov 2026",
]; // prettier-ignore

const shown = (width) => {
  const [format] = monthTicks(MONTHS.length, width);
  return MONTHS.map(format).filter(Boolean);
};

describe("the chart's month labels", () => {
  it("are whole where there is room", () => {
    expect(shown(900)).toEqual(MONTHS);
  });

  it("stack the year under the month on tablets", () => {
    expect(shown(500)[11]).toBe("Nov\n2026");
    expect(shown(500)).toHaveLength(12);
  });

  it("thin out on a phone, keeping the latest month", () => {
    const labels = shown(230); // 390 px less the page's and the card's padding
    expect(labels.length).toBeLessThanOrEqual(6);
    expect(labels.at(-1)).toBe("Nov\n2026");
    expect(230 / labels.length).toBeGreaterThanOrEqual(34);
  });
});
