import { describe, expect, it, vi } from "vitest";
import { logActions } from "./LogTable.jsx";

const ENTRY = {
  id: 1,
  username: "walter",
  action: "download",
  protocol: "sftp",
};

describe("a log entry's actions", () => {
  it("narrow the log to its user, action or protocol", () => {
    const onFilter = vi.fn();
    const filters = { search: "report", username: "" };
    const actions = logActions(ENTRY, filters, onFilter);
    expect(actions.map((a) => a.label)).toEqual([
      "Only entries of walter",
      "Only download entries",
      "Only sftp entries",
    ]);
    actions[0].onSelect();
    expect(onFilter).toHaveBeenCalledWith({
      search: "report",
      username: "walter",
    });
  });

  it("leave out what the entry lacks and what the log is already narrowed to", () => {
    const actions = logActions(
      { ...ENTRY, username: null },
      { protocol: "sftp" },
      () => {},
    );
    expect(actions.map((a) => a.label)).toEqual(["Only download entries"]);
  });
});
