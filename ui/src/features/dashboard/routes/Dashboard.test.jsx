import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { createMemoryRouter, RouterProvider } from "react-router";
import { SWRConfig } from "swr";
import { describe, expect, it } from "vitest";
import { stubApi } from "../../../test/server.js";
import { Dashboard } from "./Dashboard.jsx";

const series = (labels, counts = {}) =>
  ["sftp", "ftp", "web", "mail"].map((name) => ({
    name,
    data: labels.map((x, i) => ({ x, y: (counts[name] || [])[i] || 0 })),
  }));

const overview = (chart) => ({
  users: 1,
  active_users: 1,
  log_count: 3,
  file_transfers: 0,
  series: chart,
  logs: [],
  top_users: [],
});

function renderDashboard(path = "/") {
  const calls = stubApi({
    "GET dashboard/overview/": (url) => {
      const period = url.searchParams.get("period");
      if (period === "day")
        return [200, overview(series(["27 Nov", "28 Nov"], { web: [0, 2] }))];
      return [200, overview(series(["Oct 2026", "Nov 2026"]))];
    },
  });
  const router = createMemoryRouter([{ path: "/", element: <Dashboard /> }], {
    initialEntries: [path],
  });
  render(
    <SWRConfig value={{ provider: () => new Map(), dedupingInterval: 0 }}>
      <RouterProvider router={router} />
    </SWRConfig>,
  );
  return { calls, router };
}

describe("the dashboard's chart", () => {
  it("says there are no transfers yet instead of drawing bare axes", async () => {
    renderDashboard();
    expect(await screen.findByText("No transfers yet")).toBeTruthy();
    expect(
      screen.queryByText("File transfers per month, by protocol"),
    ).toBeNull();
    expect(
      screen
        .getByRole("button", { name: "Months" })
        .getAttribute("aria-pressed"),
    ).toBe("true");
  });

  it("offers days and weeks as well as months, kept in the address", async () => {
    const { calls, router } = renderDashboard();
    await screen.findByText("No transfers yet");
    fireEvent.click(screen.getByRole("button", { name: "Days" }));
    expect(
      await screen.findByText("File transfers per day, by protocol"),
    ).toBeTruthy();
    expect(screen.queryByText("No transfers yet")).toBeNull();
    expect(router.state.location.search).toBe("?period=day");
    expect(calls.at(-1).url.searchParams.get("period")).toBe("day");
    expect(
      screen.getByRole("button", { name: "Days" }).getAttribute("aria-pressed"),
    ).toBe("true");
    expect(screen.getByRole("rowheader", { name: "28 Nov" })).toBeTruthy();
  });

  it("opens on the period the address asks for", async () => {
    const { calls } = renderDashboard("/?period=day");
    await screen.findByText("File transfers per day, by protocol");
    await waitFor(() =>
      expect(calls[0].url.searchParams.get("period")).toBe("day"),
    );
  });
});
