import { describe, expect, it } from "vitest";
import { collectDrop, walkEntry } from "./dropped.js";
import { crumbs, joinPath } from "../../../lib/paths.js";
import { nameProblem, sortEntries } from "./paths.js";
import { shareBody } from "./ShareDialog.jsx";

// A folder tree in the shape of the File and Directory Entries API.
function fileEntry(name, content = "x") {
  return {
    name,
    isFile: true,
    isDirectory: false,
    file: (ok) => ok(new File([content], name)),
  };
}
function dirEntry(name, children, batch = 2) {
  return {
    name,
    isFile: false,
    isDirectory: true,
    createReader() {
      let at = 0;
      return {
        readEntries(ok) {
          const part = children.slice(at, at + batch); // answers in batches, like Chromium
          at += batch;
          setTimeout(() => ok(part));
        },
      };
    },
  };
}

describe("dropped folders", () => {
  it("keep their structure, read past the first batch, and name empty folders", async () => {
    const tree = dirEntry("photos", [
      fileEntry("a.jpg"),
      fileEntry("b.jpg"),
      fileEntry("c.jpg"),
      dirEntry("2026", [fileEntry("d.jpg")]),
      dirEntry("empty", []),
    ]);
    const { files, folders } = await walkEntry(tree);
    expect(files.map((f) => f.path)).toEqual([
      "photos/a.jpg",
      "photos/b.jpg",
      "photos/c.jpg",
      "photos/2026/d.jpg",
    ]);
    expect(files[0].file).toBeInstanceOf(File);
    expect(folders).toEqual(["photos/empty"]);
  });

  it("are taken from the drop's items, with plain files beside them", async () => {
    const items = [
      { kind: "file", webkitGetAsEntry: () => fileEntry("notes.txt") },
      {
        kind: "file",
        webkitGetAsEntry: () => dirEntry("docs", [fileEntry("x.pdf")]),
      },
      { kind: "string", webkitGetAsEntry: () => null },
    ];
    const { files } = await collectDrop({ items, files: [] });
    expect(files.map((f) => f.path)).toEqual(["notes.txt", "docs/x.pdf"]);
  });

  it("fall back to the plain file list without the entries API", async () => {
    const file = new File(["x"], "plain.txt");
    const { files } = await collectDrop({
      items: [{ kind: "file" }],
      files: [file],
    });
    expect(files).toEqual([{ file, path: "plain.txt" }]);
  });
});

describe("paths", () => {
  it("join, split into breadcrumbs and check names", () => {
    expect(joinPath("/", "a")).toBe("/a");
    expect(joinPath("/a/b/", "c")).toBe("/a/b/c");
    expect(crumbs("/a/b")).toEqual([
      ["Home", "/"],
      ["a", "/a"],
      ["b", "/a/b"],
    ]);
    expect(nameProblem("ok.txt")).toBeNull();
    expect(nameProblem("a/b")).not.toBeNull();
    expect(nameProblem("  ")).not.toBeNull();
  });

  it("sort folders first, then by the chosen column", () => {
    const entries = [
      {
        name: "b.txt",
        type: "file",
        size: 5,
        modified: "2026-01-02T00:00:00Z",
      },
      { name: "z", type: "dir", size: 0, modified: "2026-01-01T00:00:00Z" },
      {
        name: "a10.txt",
        type: "file",
        size: 50,
        modified: "2026-01-03T00:00:00Z",
      },
      {
        name: "a9.txt",
        type: "file",
        size: 1,
        modified: "2026-01-01T00:00:00Z",
      },
    ];
    expect(
      sortEntries(entries, { key: "name", up: true }).map((e) => e.name),
    ).toEqual(["z", "a9.txt", "a10.txt", "b.txt"]);
    expect(
      sortEntries(entries, { key: "size", up: false }).map((e) => e.name),
    ).toEqual(["z", "a10.txt", "b.txt", "a9.txt"]);
    expect(
      sortEntries(entries, { key: "modified", up: true }).map((e) => e.name)[1],
    ).toBe("a9.txt");
  });
});

describe("share links", () => {
  const values = {
    expires_at: "2030-01-31T18:00",
    password: "",
    max_downloads: "",
    upload_only: false,
    recipients: "",
    message: "",
  };
  it("send only what was chosen", () => {
    const body = shareBody("/report.pdf", values);
    expect(body.path).toBe("/report.pdf");
    expect(body.expires_at).toMatch(/^2030-01-31T\d\d:00:00Z$/);
    expect(body).not.toHaveProperty("password");
    expect(body).not.toHaveProperty("max_downloads");
    expect(body).not.toHaveProperty("recipients");
    const full = shareBody("/report.pdf", {
      ...values,
      password: "pw",
      max_downloads: "3",
      recipients: "a@example.com, b@example.com",
      message: "Hi",
    });
    expect(full).toMatchObject({
      password: "pw",
      max_downloads: 3,
      recipients: ["a@example.com", "b@example.com"],
    });
  });

  it("make a drop box without a download limit", () => {
    expect(
      shareBody("/in", { ...values, upload_only: true, max_downloads: "3" }),
    ).not.toHaveProperty("max_downloads");
  });
});
