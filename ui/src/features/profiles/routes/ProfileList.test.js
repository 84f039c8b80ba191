import { describe, expect, it, vi } from "vitest";
import { setSession } from "../../../lib/api.js";
import { profileActions } from "./ProfileList.jsx";

const labels = (actions) => actions.filter(Boolean).map((a) => a.label);

describe("a profile's row actions", () => {
  it("offer an invitation only to a profile without a password", () => {
    const handlers = { invite: vi.fn(), destroy: vi.fn() };
    const invited = {
      id: 3,
      username: "nina",
      email: "nina@example.com",
      has_password: false,
    };
    expect(labels(profileActions(invited, handlers))).toEqual([
      "Edit",
      "Send invitation",
      "Delete",
    ]);
    const set = { ...invited, has_password: true };
    expect(labels(profileActions(set, handlers))).toEqual(["Edit", "Delete"]);
    const noMail = { ...invited, email: "" };
    expect(labels(profileActions(noMail, handlers))).toEqual([
      "Edit",
      "Delete",
    ]);
    const invite = profileActions(invited, handlers).find(
      (a) => a && a.label === "Send invitation",
    );
    invite.onSelect();
    expect(handlers.invite).toHaveBeenCalledWith(invited);
    expect(profileActions(invited, handlers)[0].to).toBe("/admin/profiles/3");
  });

  it("do not let admins delete themselves", () => {
    setSession({ access: "A", refresh: "R", id: 3, username: "nina" });
    const own = profileActions(
      { id: 3, username: "nina", has_password: true },
      {},
    );
    const del = own.find((a) => a && a.label === "Delete");
    expect(del.disabled).toBe(true);
    expect(del.title).toBe("You cannot delete yourself");
    const other = profileActions(
      { id: 4, username: "olga", has_password: true },
      {},
    );
    expect(other.find((a) => a && a.label === "Delete").disabled).toBe(false);
  });
});
