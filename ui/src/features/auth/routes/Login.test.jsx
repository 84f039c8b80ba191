import { fireEvent, render, screen } from "@testing-library/react";
import { createMemoryRouter, RouterProvider } from "react-router";
import { SWRConfig } from "swr";
import { describe, expect, it } from "vitest";
import { getSession } from "../../../lib/api.js";
import { stubApi } from "../../../test/server.js";
import { Login, landingPath } from "./Login.jsx";

function renderLogin() {
  const router = createMemoryRouter(
    [
      { path: "/auth/login", element: <Login /> },
      { path: "/", element: <p>dashboard</p> },
      { path: "/fileviewer", element: <p>file viewer</p> },
    ],
    { initialEntries: ["/auth/login"] },
  );
  render(
    <SWRConfig value={{ provider: () => new Map() }}>
      <RouterProvider router={router} />
    </SWRConfig>,
  );
  return router;
}

async function signIn(username, password) {
  fireEvent.change(await screen.findByLabelText("Username"), {
    target: { value: username },
  });
  fireEvent.change(screen.getByLabelText("Password"), {
    target: { value: password },
  });
  fireEvent.click(screen.getByRole("button", { name: "Sign in" }));
}

describe("signing in", () => {
  it("shows the spec's message for any failure and stores nothing", async () => {
    stubApi({
      "GET initialized/": () => [200, { initialized: true }],
      "POST token/": () => [
        401,
        { detail: "No active account found with the given credentials" },
      ],
    });
    renderLogin();
    await signIn("admin", "wrong");
    expect((await screen.findByRole("alert")).textContent).toBe(
      "These credentials do not match our records.",
    );
    expect(getSession()).toBeNull();
  });

  it("stores the user and lands a non-admin on the file viewer", async () => {
    stubApi({
      "GET initialized/": () => [200, { initialized: true }],
      "POST token/": () => [
        200,
        { access: "A", refresh: "R", username: "walter", is_admin: false },
      ],
    });
    const router = renderLogin();
    await signIn("walter", "secret");
    expect(await screen.findByText("file viewer")).toBeTruthy();
    expect(router.state.location.pathname).toBe("/fileviewer");
    expect(getSession()).toMatchObject({
      access: "A",
      refresh: "R",
      username: "walter",
    });
  });

  it("shows the first-run setup while the appliance is not initialised", async () => {
    stubApi({ "GET initialized/": () => [200, { initialized: false }] });
    renderLogin();
    expect(
      await screen.findByRole("heading", { name: "Set up the appliance" }),
    ).toBeTruthy();
  });

  it("goes back where the guard stopped the user", () => {
    expect(landingPath({ is_admin: true }, "/admin/logs")).toBe("/admin/logs");
    expect(landingPath({ is_admin: false }, undefined)).toBe("/fileviewer");
    expect(landingPath({ is_admin: true }, "/auth/login")).toBe("/");
  });
});
