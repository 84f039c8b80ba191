import { render, screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { FileTable } from "../../../components/FileTable.jsx";
import { RowActions } from "./RowActions.jsx";
import { refusals } from "./refusals.js";

const entries = [
  { name: "report.pdf", type: "file", size: 10, modified: 0 },
  { name: "photos", type: "dir", size: 0, modified: 0 },
];

function table(refused) {
  const handlers = {
    onOpen: vi.fn(),
    onDownload: vi.fn(),
    onRename: vi.fn(),
    onDelete: vi.fn(),
    onShare: vi.fn(),
  };
  render(
    <FileTable
      entries={entries}
      sort={{ key: "name", up: true }}
      onSort={() => {}}
      onOpen={handlers.onOpen}
      actions={(entry) => (
        <RowActions entry={entry} refused={refused} {...handlers} />
      )}
    />,
  );
  return handlers;
}

describe("the file viewer's buttons follow the user's permissions", () => {
  it("refuses what the profile may not do, and everything but reading on a read-only source", () => {
    const viewer = refusals({
      permissions: ["list", "download"],
      read_only: false,
    });
    expect(viewer.download).toBeNull();
    expect(viewer.share).toBeNull();
    expect(viewer.rename).toMatch(/may not rename/);
    expect(viewer.delete).toMatch(/may not delete/);
    expect(viewer.upload).toMatch(/may not upload/);
    expect(viewer.mkdir).toMatch(/may not create folders/);
    const all = ["list", "download", "upload", "delete", "rename", "mkdir"];
    const readOnly = refusals({ permissions: all, read_only: true });
    expect(readOnly.upload).toMatch(/read-only/);
    expect(readOnly.download).toBeNull();
    expect(refusals({ permissions: all, read_only: false })).toEqual({
      download: null,
      upload: null,
      mkdir: null,
      rename: null,
      delete: null,
      share: null,
    });
    // not known yet: nothing disabled (the server decides anyway)
    expect(Object.values(refusals(undefined)).every((v) => v === null)).toBe(
      true,
    );
    expect(refusals({ permissions: ["list"] }).share).toMatch(/cannot share/);
  });

  it("disables Rename and Delete with the reason as a tooltip", () => {
    table(refusals({ permissions: ["list", "download"], read_only: false }));
    for (const name of ["report.pdf", "photos"]) {
      const rename = screen.getByRole("button", { name: `Rename ${name}` });
      const remove = screen.getByRole("button", { name: `Delete ${name}` });
      expect(rename.disabled).toBe(true);
      expect(rename.title).toMatch(/may not rename/);
      expect(remove.disabled).toBe(true);
      expect(remove.title).toMatch(/may not delete/);
      expect(
        screen.getByRole("button", { name: `Share ${name}` }).disabled,
      ).toBe(false);
    }
    expect(
      screen.getByRole("button", { name: "Download report.pdf" }).disabled,
    ).toBe(false);
  });

  it("leaves every button on for a user who may do everything", () => {
    table(refusals({ permissions: ["list", "download", "rename", "delete"] }));
    expect(screen.getByRole("button", { name: "Rename photos" }).disabled).toBe(
      false,
    );
    expect(screen.getByRole("button", { name: "Delete photos" }).disabled).toBe(
      false,
    );
  });
});
