import { describe, expect, it } from "vitest";
import { menuFor } from "./SideMenu.jsx";

const labels = (session) => menuFor(session).map(([, label]) => label);

describe("the side menu", () => {
  it("holds the spec's items for admins and the file viewer only for others", () => {
    expect(labels({ is_admin: true })).toEqual([
      "Fileviewer",
      "Dashboard",
      "Sources",
      "Profiles",
      "API Tokens",
      "Mailboxes",
      "Logs",
    ]);
    expect(labels({ is_admin: false })).toEqual(["Fileviewer"]);
    expect(labels(null)).toEqual(["Fileviewer"]);
  });

  it("adds the organisations screen for the operator", () => {
    expect(labels({ is_admin: true, is_superuser: true }).at(-1)).toBe(
      "Organisations",
    );
  });
});
