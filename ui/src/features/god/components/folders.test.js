import { describe, expect, it } from "vitest";
import { formatTime } from "../../../lib/format.js";
import { folderRowId, folderUse, sharedWarning } from "./folders.js";

const alpha = { id: 2, name: "Alpha", subdomain: "alpha", status: "active" };

describe("a local folder in the operator's list", () => {
  it("says what uses it: a source, a reservation since when and of which source, or its organisation", () => {
    const since = "2030-01-02T10:00:00Z";
    expect(
      folderUse({ source: { id: 3, name: "Drive" }, reserved: null }),
    ).toBe("Source Drive");
    expect(
      folderUse({
        source: null,
        reserved: { id: 9, since, source: "Archive" },
      }),
    ).toBe(`Reserved since ${formatTime(since)} (was Archive)`);
    expect(folderUse({ source: null, reserved: null })).toBe(
      "The organisation's own folder",
    );
  });

  it("names the organisations it is shared with, by their names where the page has them", () => {
    expect(sharedWarning({ shared_with: [] })).toBe("");
    const names = new Map([
      [3, "Beta"],
      [4, "Gamma"],
    ]);
    expect(sharedWarning({ shared_with: [3] }, names)).toBe(
      "Shared with Beta: each can read the other's files",
    );
    expect(sharedWarning({ shared_with: [3, 4, 8] }, names)).toBe(
      "Shared with Beta, Gamma and organisation 8: each can read the other's files",
    );
  });

  it("has a key of its own when one path is listed more than once", () => {
    const path = "/srv/shares/x";
    const keys = [
      { path, organisation: alpha, source: { id: 1 }, reserved: null },
      { path, organisation: alpha, source: null, reserved: { id: 1 } },
      { path, organisation: alpha, source: null, reserved: { id: 2 } },
      { path, organisation: { ...alpha, id: 5 }, source: null, reserved: null },
    ].map(folderRowId);
    expect(new Set(keys).size).toBe(4);
  });
});
