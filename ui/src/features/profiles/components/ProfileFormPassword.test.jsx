import { render, screen } from "@testing-library/react";
import { SWRConfig } from "swr";
import { describe, expect, it } from "vitest";
import { NotificationsProvider } from "../../../components/notifications.jsx";
import { stubApi } from "../../../test/server.js";
import { ProfileForm } from "./ProfileForm.jsx";

function passwordHelp(profile, label) {
  stubApi({
    "GET sources/": () => [
      200,
      { count: 0, next: null, previous: null, results: [] },
    ],
  });
  render(
    <SWRConfig value={{ provider: () => new Map() }}>
      <NotificationsProvider>
        <ProfileForm profile={profile} onSubmit={() => {}} submitLabel="Save" />
      </NotificationsProvider>
    </SWRConfig>,
  );
  const field = screen.getByLabelText(label);
  return document.getElementById(field.getAttribute("aria-describedby"))
    .textContent;
}

describe("the profile form's password", () => {
  it("says the sign-in rule, and that none sends an invitation", () => {
    expect(passwordHelp(null, "Password")).toBe(
      "At least 12 characters; not a common password. Leave empty to send an invitation: the person chooses a password from the mail.",
    );
  });

  it("says the sign-in rule on a change too", () => {
    const olga = { id: 3, username: "olga", email: "o@example.com" };
    expect(passwordHelp(olga, "New password")).toBe(
      "At least 12 characters; not a common password. Leave empty to keep the current password.",
    );
  });
});
