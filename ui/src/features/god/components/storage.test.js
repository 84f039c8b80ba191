import { describe, expect, it } from "vitest";
import { storageMeasured, storageText } from "./storage.js";

describe("an organisation's storage in the operator's list", () => {
  it("reads as size and files", () => {
    expect(storageText({ storage_bytes: 1_234_567, storage_files: 340 })).toBe(
      "1.2 MB in 340 files",
    );
    expect(storageText({ storage_bytes: 0, storage_files: 0 })).toBe(
      "0 B in 0 files",
    );
    expect(storageText({ storage_bytes: 10, storage_files: 1 })).toBe(
      "10 B in 1 file",
    );
  });

  it("says when it was not measured yet", () => {
    expect(storageText({ storage_bytes: null, storage_files: null })).toBe(
      "Not measured yet",
    );
    expect(storageMeasured({ storage_measured_at: null })).toBe("");
    expect(
      storageMeasured({ storage_measured_at: "2026-03-01T10:00:00.000000Z" }),
    ).toMatch(/^Measured /);
  });
});
