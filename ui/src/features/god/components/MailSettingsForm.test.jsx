import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { SWRConfig } from "swr";
import { describe, expect, it } from "vitest";
import { NotificationsProvider } from "../../../components/notifications.jsx";
import { stubApi } from "../../../test/server.js";
import { MailSettingsForm } from "./MailSettingsForm.jsx";
import { SETTINGS } from "./settingsFixture.js";

function renderForm(reply = [200, SETTINGS]) {
  const calls = stubApi({ "PATCH god/settings/": () => reply });
  render(
    <SWRConfig value={{ provider: () => new Map(), dedupingInterval: 0 }}>
      <NotificationsProvider>
        <MailSettingsForm settings={SETTINGS} />
      </NotificationsProvider>
    </SWRConfig>,
  );
  return calls;
}

describe("the operator's outbound mail form", () => {
  it("shows a field the config sets as disabled, saying so", () => {
    renderForm();
    const host = screen.getByLabelText("Mail server");
    expect(host.disabled).toBe(true);
    expect(host.value).toBe("127.0.0.1");
    expect(screen.getByText(/^Set in the config file/).textContent).toContain(
      "APPLIANCE_SMTP_HOST",
    );
    expect(screen.getByLabelText("Port").disabled).toBe(false);
  });

  it("keeps the password unless one is typed, and saves the rest", async () => {
    const calls = renderForm();
    const password = screen.getByLabelText("Mail server password");
    expect(password.value).toBe("");
    expect(password.placeholder).toBe("leave empty to keep");
    fireEvent.change(screen.getByLabelText("Port"), {
      target: { value: "587" },
    });
    fireEvent.click(screen.getByRole("button", { name: "Save mail settings" }));
    await waitFor(() => expect(calls).toHaveLength(1));
    expect(JSON.parse(calls[0].init.body)).toEqual({
      smtp: {
        port: 587,
        starttls: false,
        sender: "portal@localhost",
        username: "",
      },
    });
    expect(
      await screen.findByText(
        "Outbound mail settings saved: the next mail uses them",
      ),
    ).toBeTruthy();
  });

  it("shows the server's refusal beside its field", async () => {
    renderForm([400, { "smtp.sender": ["Enter the address."] }]);
    fireEvent.click(screen.getByRole("button", { name: "Save mail settings" }));
    const sender = screen.getByLabelText("Sender address");
    await waitFor(() =>
      expect(sender.getAttribute("aria-invalid")).toBe("true"),
    );
    expect(screen.getAllByText("Enter the address.").length).toBeGreaterThan(0);
  });
});
