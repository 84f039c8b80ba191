import { describe, expect, it } from "vitest";
import { logoProblem } from "./components/LogoSection.jsx";
import { colourContrast, colourError } from "./routes/OrganisationSettings.jsx";

describe("organisation settings", () => {
  it("take a branding colour as #RRGGBB or nothing", () => {
    expect(colourError("#3D37FF")).toBeNull();
    expect(colourError("#3d37ff")).toBeNull();
    expect(colourError("")).toBeNull();
    expect(colourError("blue")).toMatch(/#RRGGBB/);
    expect(colourError("#3D37F")).toMatch(/#RRGGBB/);
  });

  it("say what the menu's text will be on the colour, and warn on mid-tones", () => {
    expect(colourContrast("#8FE3D6")).toMatchObject({ warning: null });
    expect(colourContrast("#8FE3D6").note).toMatch(
      /dark on it \(contrast 11.8:1\)/,
    );
    expect(colourContrast("#0B2545").note).toMatch(/white/);
    expect(colourContrast("#808080").warning).toMatch(/Poor contrast/);
  });

  it("check a logo's size and type before sending it", () => {
    expect(
      logoProblem(new File(["x"], "logo.png", { type: "image/png" })),
    ).toBeNull();
    expect(
      logoProblem(new File(["x"], "logo.svg", { type: "image/svg+xml" })),
    ).toBeNull();
    expect(
      logoProblem(new File(["x"], "logo.gif", { type: "image/gif" })),
    ).toMatch(/PNG, JPEG or SVG/);
    expect(
      logoProblem(
        new File([new Uint8Array(512 * 1024 + 1)], "big.png", {
          type: "image/png",
        }),
      ),
    ).toMatch(/too large/);
  });
});
