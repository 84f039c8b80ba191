import { describe, expect, it } from "vitest";
import {
  brandColours,
  contrastRatio,
  mix,
  surfaceStyle,
  textOn,
} from "./contrast.js";

describe("contrast", () => {
  it("computes the WCAG ratio", () => {
    expect(contrastRatio("#FFFFFF", "#000000")).toBeCloseTo(21, 5);
    expect(contrastRatio("#22992E", "#FFFFFF")).toBeCloseTo(3.71, 2); // the old connect chip
    expect(contrastRatio("#757575", "#F5F5F5")).toBeCloseTo(4.23, 2); // the old helper text
  });

  it("puts dark text on light branding colours and white on dark ones", () => {
    expect(textOn("#8FE3D6").text).toBe("#191919"); // a light teal: white was 1.5:1
    expect(textOn("#0B2545").text).toBe("#FFFFFF");
    expect(textOn("#1E1E1E").text).toBe("#FFFFFF"); // the default menu colour
  });

  it("reaches 4.5:1 on every colour, and says when it needed black to", () => {
    for (let v = 0; v < 256; v += 5) {
      const hex = `#${v.toString(16).padStart(2, "0").repeat(3)}`;
      for (const colour of [
        hex,
        `#${hex.slice(1, 3)}8040`,
        `#20${hex.slice(3)}`,
      ]) {
        const { text, ratio } = textOn(colour);
        expect(contrastRatio(colour, text)).toBeCloseTo(ratio, 5);
        expect(ratio).toBeGreaterThanOrEqual(4.5);
      }
    }
    expect(textOn("#808080")).toMatchObject({ text: "#000000", poor: true });
    expect(textOn("#26A69A").poor).toBe(false);
  });

  it("gives a surface its text colour as CSS", () => {
    expect(surfaceStyle("#8FE3D6")).toMatchObject({
      background: "#8FE3D6",
      color: "#191919",
      "--on-brand": "#191919",
    });
  });
});

describe("the branding colour on the header and primary buttons", () => {
  it("gives each the text that reads on it, and a hover that only adds contrast", () => {
    for (const colour of ["#8FE3D6", "#0B2545", "#808080", "#FFBF1F"]) {
      const vars = brandColours(colour);
      expect(vars["--button"]).toBe(colour);
      expect(vars["--header"]).toBe(colour);
      const text = vars["--on-button"];
      expect(vars["--on-header"]).toBe(text);
      expect(contrastRatio(colour, text)).toBeGreaterThanOrEqual(4.5);
      expect(
        contrastRatio(vars["--button-hover"], text),
      ).toBeGreaterThanOrEqual(contrastRatio(colour, text));
      expect(contrastRatio(vars["--avatar"], vars["--on-avatar"])).toBe(
        contrastRatio(colour, text),
      );
    }
    expect(brandColours("#8FE3D6")["--on-button"]).toBe("#191919"); // light teal: dark text
    expect(brandColours("#0B2545")["--on-button"]).toBe("#FFFFFF");
  });

  it("mixes colours", () => {
    expect(mix("#000000", "#FFFFFF", 0.5)).toBe("#808080");
    expect(mix("#0B2545", "#000000", 0)).toBe("#0B2545");
  });
});
