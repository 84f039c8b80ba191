import { render, screen } from "@testing-library/react";
import { createMemoryRouter, RouterProvider } from "react-router";
import { describe, expect, it } from "vitest";
import { NotificationsProvider } from "../../../components/notifications.jsx";
import { SIGN_IN_PASSWORD_HELP } from "../../../lib/passwords.js";
import { ChoosePasswordForm } from "./ChoosePasswordForm.jsx";
import { SetupForm } from "./SetupForm.jsx";

/** The help text a field is described by. */
const helpOf = (field) =>
  field
    .getAttribute("aria-describedby")
    .split(" ")
    .map((id) => document.getElementById(id).textContent)
    .join(" ");

function renderAt(element) {
  const router = createMemoryRouter([{ path: "/", element }]);
  render(
    <NotificationsProvider>
      <RouterProvider router={router} />
    </NotificationsProvider>,
  );
}

describe("where a sign-in password is chosen", () => {
  it("says the rule in the server's terms", () => {
    expect(SIGN_IN_PASSWORD_HELP).toBe(
      "At least 12 characters; not a common password.",
    );
  });

  it("first-run setup says it under the password", () => {
    renderAt(<SetupForm onSignedIn={() => {}} />);
    expect(helpOf(screen.getByLabelText("Password"))).toBe(
      SIGN_IN_PASSWORD_HELP,
    );
  });

  it("a reset link or an invitation says it under the new password", () => {
    renderAt(<ChoosePasswordForm uid="MQ" token="t" title="Choose" />);
    expect(helpOf(screen.getByLabelText("New password"))).toBe(
      SIGN_IN_PASSWORD_HELP,
    );
  });
});
