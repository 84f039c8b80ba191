import { fireEvent, render, screen, within } from "@testing-library/react";
import { SWRConfig } from "swr";
import { describe, expect, it } from "vitest";
import { ConfirmProvider } from "../../../components/Dialog.jsx";
import { NotificationsProvider } from "../../../components/notifications.jsx";
import { stubApi } from "../../../test/server.js";
import { FoldersSection, RELEASE_WARNING } from "./FoldersSection.jsx";

const ALPHA = { id: 2, name: "Alpha", subdomain: "alpha", status: "active" };
const BETA = { id: 3, name: "Beta", subdomain: "beta", status: "deleted" };
const paged = (results) => ({
  count: results.length,
  next: null,
  previous: null,
  results,
});

function renderSection(rows) {
  let listed = rows;
  const calls = stubApi({
    "GET god/folders/": () => [200, paged(listed)],
    "DELETE god/folders/reserved/9/": () => {
      listed = listed.filter((r) => !r.reserved || r.reserved.id !== 9);
      return [204];
    },
  });
  render(
    <SWRConfig value={{ provider: () => new Map(), dedupingInterval: 0 }}>
      <NotificationsProvider>
        <ConfirmProvider>
          <FoldersSection />
        </ConfirmProvider>
      </NotificationsProvider>
    </SWRConfig>,
  );
  return calls;
}

const ROWS = [
  {
    path: "/srv/shares/archive",
    organisation: BETA,
    source: null,
    reserved: { id: 9, since: "2030-01-02T10:00:00Z", source: "Archive" },
    shared_with: [],
  },
  {
    path: "/srv/shares/drive",
    organisation: ALPHA,
    source: { id: 4, name: "Drive" },
    reserved: null,
    shared_with: [3],
  },
];

const row = (text) =>
  screen.getAllByRole("row").find((r) => r.textContent.includes(text));

describe("the operator's local folders", () => {
  it("lists each folder with its organisation's status, its use and whom it is shared with", async () => {
    renderSection(ROWS);
    expect(
      await screen.findByRole("heading", { name: "Local folders" }),
    ).toBeTruthy();
    await screen.findByText("/srv/shares/drive");
    const reserved = row("/srv/shares/archive");
    expect(reserved.textContent).toContain("Beta");
    expect(reserved.textContent).toContain("Deleted");
    expect(reserved.textContent).toMatch(/Reserved since .* \(was Archive\)/);
    const drive = row("/srv/shares/drive");
    expect(drive.textContent).toContain("Source Drive");
    expect(within(drive).getByTestId("shared-folder").textContent).toBe(
      "Shared with Beta: each can read the other's files",
    );
    expect(within(drive).queryByRole("button")).toBeNull(); // only a reservation is released
  });

  it("releases a reserved folder once the operator confirms, then lists what is left", async () => {
    const calls = renderSection(ROWS);
    await screen.findByText("/srv/shares/archive");
    fireEvent.click(
      screen.getByRole("button", { name: "Release /srv/shares/archive" }),
    );
    const dialog = screen.getByRole("dialog", { name: "Release the folder" });
    expect(dialog.textContent).toContain(RELEASE_WARNING);
    expect(RELEASE_WARNING).toBe(
      "Any organisation may then make a source in this folder and read the files left in it.",
    );
    fireEvent.click(within(dialog).getByRole("button", { name: "Release" }));
    expect((await screen.findByTestId("notification")).textContent).toBe(
      "Released /srv/shares/archive",
    );
    expect(screen.queryByText("/srv/shares/archive")).toBeNull();
    expect(screen.getByText("/srv/shares/drive")).toBeTruthy();
    expect(calls.filter((c) => c.method === "DELETE")).toHaveLength(1);
  });

  it("asks again before anything is released: cancelling sends nothing", async () => {
    const calls = renderSection(ROWS);
    await screen.findByText("/srv/shares/archive");
    fireEvent.click(
      screen.getByRole("button", { name: "Release /srv/shares/archive" }),
    );
    fireEvent.click(screen.getByRole("button", { name: "Cancel" }));
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(calls.filter((c) => c.method === "DELETE")).toHaveLength(0);
  });
});
