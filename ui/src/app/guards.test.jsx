import { render, screen } from "@testing-library/react";
import { createMemoryRouter, RouterProvider } from "react-router";
import { describe, expect, it } from "vitest";
import { setSession } from "../lib/api.js";
import { guardRedirect, RequireSession } from "./guards.jsx";

const admin = { access: "A", refresh: "R", username: "boss", is_admin: true };
const user = { access: "A", refresh: "R", username: "walter", is_admin: false };

describe("the route guard", () => {
  it("sends a caller without a session to /auth/login", () => {
    expect(guardRedirect(null, "/")).toBe("/auth/login");
    expect(guardRedirect(null, "/fileviewer")).toBe("/auth/login");
    expect(guardRedirect({ refresh: "R" }, "/admin/profiles")).toBe(
      "/auth/login",
    );
  });

  it("sends a signed-in non-admin from / and admin screens to /fileviewer", () => {
    expect(guardRedirect(user, "/")).toBe("/fileviewer");
    expect(guardRedirect(user, "/admin/profiles")).toBe("/fileviewer");
    expect(guardRedirect(user, "/fileviewer")).toBeNull();
    expect(guardRedirect(user, "/user-terms")).toBeNull();
  });

  it("lets admins in, and only superusers into the operator's screens", () => {
    expect(guardRedirect(admin, "/")).toBeNull();
    expect(guardRedirect(admin, "/admin/profiles/3")).toBeNull();
    expect(guardRedirect(admin, "/admin/god")).toBe("/");
    expect(
      guardRedirect({ ...admin, is_superuser: true }, "/admin/god/2/logs"),
    ).toBeNull();
  });

  function renderAt(path) {
    const router = createMemoryRouter(
      [
        { path: "/auth/login", element: <p>login page</p> },
        {
          element: <RequireSession />,
          children: [
            { index: true, element: <p>dashboard</p> },
            { path: "fileviewer", element: <p>file viewer</p> },
          ],
        },
      ],
      { initialEntries: [path] },
    );
    render(<RouterProvider router={router} />);
    return router;
  }

  it("renders the login page for a main-layout route without a session", async () => {
    const router = renderAt("/fileviewer");
    expect(await screen.findByText("login page")).toBeTruthy();
    expect(router.state.location.state).toEqual({ from: "/fileviewer" });
  });

  it("lands a non-admin opening / on the file viewer", async () => {
    setSession(user);
    const router = renderAt("/");
    expect(await screen.findByText("file viewer")).toBeTruthy();
    expect(router.state.location.pathname).toBe("/fileviewer");
  });

  it("shows the dashboard to an admin", async () => {
    setSession(admin);
    renderAt("/");
    expect(await screen.findByText("dashboard")).toBeTruthy();
  });
});
