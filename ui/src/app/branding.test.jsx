import { render, renderHook, screen, waitFor } from "@testing-library/react";
import { createMemoryRouter, RouterProvider } from "react-router";
import { SWRConfig } from "swr";
import { describe, expect, it } from "vitest";
import { AuthLayout } from "./layouts/AuthLayout.jsx";
import { mainBranding } from "./layouts/MainLayout.jsx";
import { useBrandColours } from "./layouts/useBrandColours.js";
import { stubApi } from "../test/server.js";
import { brandingSubdomain } from "../features/branding/subdomain.js";

const at = (hostname, search = "") => ({ hostname, search });

function memoryStorage() {
  const items = new Map();
  return {
    getItem: (k) => items.get(k) ?? null,
    setItem: (k, v) => items.set(k, String(v)),
  };
}

describe("which branding loads", () => {
  it("uses the host name's first label unless it is app or localhost", () => {
    const storage = memoryStorage();
    expect(brandingSubdomain(at("acme.files.example.com"), storage)).toBe(
      "acme",
    );
    expect(brandingSubdomain(at("app.files.example.com"), storage)).toBeNull();
    expect(brandingSubdomain(at("localhost"), storage)).toBeNull();
    expect(brandingSubdomain(at("127.0.0.1"), storage)).toBeNull();
  });

  it("lets ?branding= override the host, and keeps the override for the visit", () => {
    const storage = memoryStorage();
    expect(
      brandingSubdomain(at("localhost", "?branding=globex"), storage),
    ).toBe("globex");
    expect(brandingSubdomain(at("localhost"), storage)).toBe("globex");
    expect(
      brandingSubdomain(at("app.example.com", "?branding=initech"), storage),
    ).toBe("initech");
  });
});

function renderAuth() {
  const router = createMemoryRouter(
    [
      {
        path: "/auth",
        element: <AuthLayout />,
        children: [{ path: "login", element: <p>the form</p> }],
      },
    ],
    { initialEntries: ["/auth/login"] },
  );
  return render(
    <SWRConfig value={{ provider: () => new Map(), shouldRetryOnError: false }}>
      <RouterProvider router={router} />
    </SWRConfig>,
  );
}

describe("the auth layout's branding", () => {
  it("stays hidden until the branding request settles, then shows the organisation's colour and logo", async () => {
    window.history.pushState({}, "", "/auth/login?branding=acme");
    let answer;
    const calls = stubApi({
      "GET branding/": () =>
        new Promise((resolve) => {
          answer = resolve;
        }),
    });
    renderAuth();
    await waitFor(() => expect(calls).toHaveLength(1));
    expect(calls[0].url.searchParams.get("subdomain")).toBe("acme");
    expect(screen.queryByText("the form")).toBeNull();
    answer([
      200,
      {
        branding: true,
        branding_logo: "/logo.png",
        branding_colour: "#123456",
      },
    ]);
    expect(await screen.findByText("the form")).toBeTruthy();
    expect(screen.getByTestId("auth-panel").style.background).toBe(
      "rgb(18, 52, 86)",
    );
    expect(screen.getByAltText("Logo").getAttribute("src")).toBe("/logo.png");
    // the Sign in button in the organisation's colour too
    expect(document.documentElement.style.getPropertyValue("--button")).toBe(
      "#123456",
    );
  });

  it("falls back to the default branding silently when the request fails", async () => {
    window.history.pushState({}, "", "/auth/login?branding=gone");
    stubApi({ "GET branding/": () => [500, { detail: "Internal error" }] });
    renderAuth();
    expect(await screen.findByText("the form")).toBeTruthy();
    expect(screen.getByTestId("auth-panel").style.background).toBe(
      "rgb(47, 48, 51)",
    ); // #2f3033
  });

  it("asks for no branding on app.* or localhost", async () => {
    const calls = stubApi({});
    renderAuth();
    expect(await screen.findByText("the form")).toBeTruthy();
    expect(calls).toHaveLength(0);
  });
});

describe("the main layout's colour", () => {
  it("is the host's branding, else the organisation's, else #1E1E1E", () => {
    expect(
      mainBranding({ branding: true, branding_colour: "#AA0000" }, null).colour,
    ).toBe("#AA0000");
    expect(
      mainBranding(
        { branding: false },
        { branding: true, branding_colour: "#00AA00" },
      ).colour,
    ).toBe("#00AA00");
    expect(
      mainBranding(
        { branding: false },
        { branding: false, branding_colour: "#00AA00" },
      ).colour,
    ).toBe("#1E1E1E");
    expect(mainBranding({ branding: false }, null)).toEqual({
      colour: "#1E1E1E",
      logo: null,
      brandColour: null,
    });
  });
});

describe("the branding colour beyond the side menu", () => {
  it("is the main layout's only when the organisation has one", () => {
    expect(
      mainBranding({ branding: true, branding_colour: "#0B2545" }, null)
        .brandColour,
    ).toBe("#0B2545");
    expect(
      mainBranding({ branding: false }, { branding: true }).brandColour,
    ).toBeNull();
  });

  it("reaches the header and primary buttons, with readable text, until the layout goes", () => {
    const root = document.documentElement.style;
    const { rerender, unmount } = renderHook(
      ({ colour }) => useBrandColours(colour),
      { initialProps: { colour: "#8FE3D6" } },
    );
    expect(root.getPropertyValue("--button")).toBe("#8FE3D6");
    expect(root.getPropertyValue("--header")).toBe("#8FE3D6");
    expect(root.getPropertyValue("--on-button")).toBe("#191919");
    rerender({ colour: "#0B2545" });
    expect(root.getPropertyValue("--on-header")).toBe("#FFFFFF");
    rerender({ colour: null }); // branding off: the defaults of theme.css
    expect(root.getPropertyValue("--button")).toBe("");
    rerender({ colour: "#0B2545" });
    unmount();
    expect(root.getPropertyValue("--header")).toBe("");
  });
});
