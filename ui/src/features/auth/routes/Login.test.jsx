import { fireEvent, render, screen } from "@testing-library/react";
import { createMemoryRouter, RouterProvider } from "react-router";
import { SWRConfig } from "swr";
import { describe, expect, it, vi } from "vitest";
import { getSession } from "../../../lib/api.js";
import { stubApi } from "../../../test/server.js";
import { LOGIN_FAILED, refusal } from "../api/login.js";
import { Login, landingPath } from "./Login.jsx";

function renderLogin() {
  const router = createMemoryRouter(
    [
      { path: "/auth/login", element: <Login /> },
      { path: "/", element: <p>dashboard</p> },
      { path: "/fileviewer", element: <p>file viewer</p> },
      { path: "/auth/billing", element: <p>billing</p> },
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

describe("a refused sign-in", () => {
  const refused = (body) => ({ status: 401, data: body });
  it("keeps one message for wrong credentials, whatever the server said", () => {
    expect(
      refusal(
        refused({
          detail: "Invalid username or password.",
          code: "invalid_credentials",
        }),
      ),
    ).toEqual({ message: LOGIN_FAILED });
    expect(refusal(refused({ detail: "anything" }))).toEqual({
      message: LOGIN_FAILED,
    });
    expect(refusal({ status: 400, data: { username: ["x"] } })).toEqual({
      message: LOGIN_FAILED,
    });
  });

  it("sends a payment missing (an ended trial too) to the billing page", () => {
    expect(
      refusal(
        refused({
          detail: "Organisation payment missing",
          code: "payment_missing",
        }),
      ),
    ).toEqual({ redirect: "/auth/billing" });
  });

  it("says a deleted organisation is deleted", () => {
    expect(
      refusal(
        refused({
          detail: "Organisation is deleted",
          code: "organisation_deleted",
        }),
      ).message,
    ).toMatch(/organisation has been deleted/);
  });

  it("says when a ban ends", () => {
    const now = new Date(2030, 0, 2, 14, 30, 0);
    const { message } = refusal(
      refused({
        detail:
          "Too many failed sign-ins from 10.0.0.1: try again in 5 minutes.",
        code: "banned",
        retry_after: 300,
      }),
      now,
    );
    expect(message).toMatch(
      /^Too many failed sign-ins from 10.0.0.1: try again in 5 minutes\./,
    );
    expect(message).toContain(
      new Date(2030, 0, 2, 14, 35).toLocaleTimeString([], {
        hour: "2-digit",
        minute: "2-digit",
      }),
    );
  });

  it("shows the server's own words for the other reasons", () => {
    expect(
      refusal(
        refused({
          detail:
            "This account is disabled. Ask your administrator to enable it.",
          code: "account_disabled",
        }),
      ).message,
    ).toBe("This account is disabled. Ask your administrator to enable it.");
    expect(
      refusal({
        status: 0,
        data: { detail: "The appliance could not be reached." },
      }).message,
    ).toBe("The appliance could not be reached.");
  });
});

describe("the login page", () => {
  it("goes to the billing page when the organisation's payment is missing", async () => {
    stubApi({
      "GET initialized/": () => [200, { initialized: true }],
      "POST token/": () => [
        401,
        { detail: "Organisation payment missing", code: "payment_missing" },
      ],
      "GET branding/": () => [200, { branding: false }],
    });
    const router = renderLogin();
    await signIn("ann", "right");
    await vi.waitFor(() =>
      expect(router.state.location.pathname).toBe("/auth/billing"),
    );
    expect(getSession()).toBeNull();
  });
});
