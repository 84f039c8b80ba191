import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { NotificationsProvider } from "./notifications.jsx";
import { InvitationLink, invitationNote } from "./InvitationLink.jsx";

const UNMAILED = {
  mailed: false,
  error: "connection refused",
  link: "https://files.example.com/auth/register?uid=b&token=t",
  detail:
    "The invitation could not be mailed to bill@example.com (connection refused).",
};

describe("an invitation, told to the admin who sent it", () => {
  it("says what became of it, for a profile or an organisation's first admin", () => {
    expect(invitationNote("petra", undefined)).toEqual({
      type: "positive",
      message: "Created petra",
    });
    expect(
      invitationNote("Initech", {
        mailed: true,
        detail: "An invitation was sent to bill@example.com.",
      }),
    ).toEqual({
      type: "positive",
      message: "Created Initech; an invitation was sent to bill@example.com.",
    });
    expect(invitationNote("Initech", UNMAILED)).toEqual({
      type: "warning",
      message:
        "Created Initech, but the invitation was not mailed: copy its link.",
    });
  });

  it("offers the link of one not mailed, with what else can be done", () => {
    render(
      <NotificationsProvider>
        <InvitationLink
          invitation={UNMAILED}
          onClose={() => {}}
          help="Outbound mail, below the list, says how mail is doing."
        />
      </NotificationsProvider>,
    );
    const dialog = screen.getByRole("dialog", {
      name: "The invitation was not mailed",
    });
    expect(dialog.textContent).toContain(UNMAILED.detail);
    expect(screen.getByLabelText("Invitation link").value).toBe(UNMAILED.link);
    expect(dialog.textContent).toContain(
      "Outbound mail, below the list, says how mail is doing.",
    );
    expect(screen.getByRole("button", { name: "Copy link" })).toBeTruthy();
  });
});
