import { fireEvent, render, screen, within } from "@testing-library/react";
import { createMemoryRouter, RouterProvider } from "react-router";
import { SWRConfig } from "swr";
import { describe, expect, it } from "vitest";
import { ConfirmProvider } from "../../../components/Dialog.jsx";
import { NotificationsProvider } from "../../../components/notifications.jsx";
import { stubApi } from "../../../test/server.js";
import { SourceDetail } from "./SourceDetail.jsx";

function renderSource(source) {
  let gone = false;
  const calls = stubApi({
    [`GET sources/${source.id}/`]: () =>
      gone ? [404, { detail: "Not found." }] : [200, source],
    "GET sources/": () => [200, { count: 0, results: [] }],
    [`DELETE sources/${source.id}/`]: () => {
      gone = true;
      return [204];
    },
  });
  const router = createMemoryRouter(
    [
      { path: "/admin/sources/:pid", element: <SourceDetail /> },
      { path: "/admin/sources", element: <p>the sources</p> },
    ],
    { initialEntries: [`/admin/sources/${source.id}`] },
  );
  render(
    <SWRConfig value={{ provider: () => new Map(), dedupingInterval: 0 }}>
      <NotificationsProvider>
        <ConfirmProvider>
          <RouterProvider router={router} />
        </ConfirmProvider>
      </NotificationsProvider>
    </SWRConfig>,
  );
  return { calls, router };
}

const SOURCE = {
  read_only: false,
  status: "ok",
  last_error: "",
  default: false,
};

describe("deleting a source from its page", () => {
  it("asks a local source's admin what becomes of the files", async () => {
    const { calls, router } = renderSource({
      ...SOURCE,
      id: 4,
      name: "Scratch",
      type: "local",
      config: { path: "/srv/scratch" },
    });
    fireEvent.click(await screen.findByRole("button", { name: "Delete" }));
    const dialog = screen.getByRole("dialog", { name: "Delete the source" });
    expect(dialog.textContent).not.toMatch(/not deleted/);
    fireEvent.click(
      within(dialog).getByRole("radio", {
        name: "Delete the folder and all its files",
      }),
    );
    fireEvent.click(
      within(dialog).getByRole("button", {
        name: "Delete the source and its files",
      }),
    );
    expect(await screen.findByText("the sources")).toBeTruthy();
    expect(router.state.location.pathname).toBe("/admin/sources");
    expect(screen.getByTestId("notification").textContent).toBe(
      "Deleted Scratch and its files",
    );
    const sent = calls.find((c) => c.method === "DELETE");
    expect(sent.url.searchParams.get("files")).toBe("delete");
  });

  it("only confirms for a remote source: its files are not the appliance's", async () => {
    const { calls } = renderSource({
      ...SOURCE,
      id: 5,
      name: "Partner",
      type: "sftp",
      config: { host: "sftp.example.com", port: 22, path: "in" },
    });
    fireEvent.click(await screen.findByRole("button", { name: "Delete" }));
    const dialog = screen.getByRole("dialog", { name: "Delete the source" });
    expect(dialog.textContent).toContain(
      "The files on the remote server are not touched.",
    );
    expect(within(dialog).queryByRole("radio")).toBeNull();
    fireEvent.click(
      within(dialog).getByRole("button", { name: "Delete the source" }),
    );
    expect(await screen.findByText("the sources")).toBeTruthy();
    const sent = calls.find((c) => c.method === "DELETE");
    expect(sent.url.search).toBe("");
  });
});
