import { render, screen } from "@testing-library/react";
import { createMemoryRouter, RouterProvider } from "react-router";
import { SWRConfig } from "swr";
import { describe, expect, it } from "vitest";
import { stubApi } from "../../../test/server.js";
import { SettingsWarning } from "./SettingsWarning.jsx";

const WARNINGS = [
  {
    setting: "server.public_hostname",
    message:
      "The public host name is localhost: links name a host nobody else can reach.",
  },
  {
    setting: "smtp.host",
    message: "Outbound mail is not set up.",
  },
];

function renderWarning(operator, warnings = WARNINGS) {
  const calls = stubApi({
    "GET god/settings/": () => [200, { server: {}, smtp: {}, warnings }],
  });
  const router = createMemoryRouter(
    [{ path: "*", element: <SettingsWarning operator={operator} /> }],
    { initialEntries: ["/fileviewer"] },
  );
  render(
    <SWRConfig value={{ provider: () => new Map(), dedupingInterval: 0 }}>
      <RouterProvider router={router} />
    </SWRConfig>,
  );
  return calls;
}

describe("the operator's warning banner", () => {
  it("names what is still to set, each with a link to where it is set", async () => {
    renderWarning(true);
    const host = await screen.findByRole("link", {
      name: "Set the public host name",
    });
    expect(host.getAttribute("href")).toBe("/admin/god#public-host-name");
    const mail = screen.getByRole("link", { name: "Set up outbound mail" });
    expect(mail.getAttribute("href")).toBe("/admin/god#outbound-mail");
    expect(
      screen.getByRole("region", { name: "Appliance settings to finish" }),
    ).toHaveProperty("textContent", expect.stringContaining("localhost"));
  });

  it("is not there once everything is set", async () => {
    const calls = renderWarning(true, []);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(calls).toHaveLength(1);
    expect(screen.queryByTestId("settings-warning")).toBeNull();
  });

  it("asks nothing and shows nothing to anyone but the operator", async () => {
    const calls = renderWarning(false);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(calls).toHaveLength(0);
    expect(screen.queryByTestId("settings-warning")).toBeNull();
  });
});
