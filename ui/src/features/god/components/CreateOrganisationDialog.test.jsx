import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { SWRConfig } from "swr";
import { describe, expect, it, vi } from "vitest";
import { NotificationsProvider } from "../../../components/notifications.jsx";
import { stubApi } from "../../../test/server.js";
import { CreateOrganisationDialog } from "./CreateOrganisationDialog.jsx";

const INITECH = {
  id: 7,
  name: "Initech",
  subdomain: "initech",
  status: "trial",
};
const LINK = "https://files.example.com/auth/register?uid=b&token=t";

function renderDialog(invitation) {
  const calls = stubApi({
    "POST god/organisations/": () => [
      201,
      invitation ? { ...INITECH, invitation } : INITECH,
    ],
  });
  const onClose = vi.fn();
  render(
    <SWRConfig value={{ provider: () => new Map(), dedupingInterval: 0 }}>
      <NotificationsProvider>
        <CreateOrganisationDialog onClose={onClose} />
      </NotificationsProvider>
    </SWRConfig>,
  );
  const fill = (label, value) =>
    fireEvent.change(screen.getByLabelText(label), { target: { value } });
  fill("Name", "Initech");
  fill("First admin's username", "bill");
  fill("First admin's email", "bill@example.com");
  fireEvent.click(screen.getByRole("button", { name: "Create" }));
  return { calls, onClose };
}

describe("creating an organisation", () => {
  it("says what a first admin's password needs, and that none means an invitation", () => {
    renderDialog(null);
    const password = screen.getByLabelText("First admin's password");
    const help = document.getElementById(
      password.getAttribute("aria-describedby"),
    );
    expect(help.textContent).toBe(
      "At least 12 characters; not a common password. Empty: the admin is invited by mail.",
    );
  });

  it("shows the link of a first admin's invitation that was not mailed", async () => {
    const { calls, onClose } = renderDialog({
      mailed: false,
      error: "connection refused",
      link: LINK,
      detail: "The invitation could not be mailed to bill@example.com.",
    });
    const dialog = await screen.findByRole("dialog", {
      name: "The invitation was not mailed",
    });
    expect(screen.getByLabelText("Invitation link").value).toBe(LINK);
    expect(dialog.textContent).toContain("could not be mailed");
    expect(
      screen.getByText(
        "Created Initech, but the invitation was not mailed: copy its link.",
      ),
    ).toBeTruthy();
    expect(JSON.parse(calls[0].init.body).admin.password).toBeNull();
    expect(onClose).not.toHaveBeenCalled();
    fireEvent.click(screen.getByRole("button", { name: "Close" }));
    expect(onClose).toHaveBeenCalled();
  });

  it("says a mailed invitation was sent, and closes", async () => {
    const { onClose } = renderDialog({
      mailed: true,
      detail: "An invitation was sent to bill@example.com.",
    });
    await waitFor(() => expect(onClose).toHaveBeenCalled());
    expect(
      screen.getByText(
        "Created Initech; an invitation was sent to bill@example.com.",
      ),
    ).toBeTruthy();
    expect(screen.queryByLabelText("Invitation link")).toBeNull();
  });
});
