import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { SWRConfig } from "swr";
import { describe, expect, it, vi } from "vitest";
import { NotificationsProvider } from "../../../components/notifications.jsx";
import { stubApi } from "../../../test/server.js";
import { DeleteSourceDialog, fileChoices } from "./DeleteSourceDialog.jsx";

const ARCHIVE = {
  id: 7,
  name: "Archive",
  type: "local",
  read_only: false,
  config: { path: "/srv/shares/archive" },
};

function renderDialog(source = ARCHIVE) {
  const onClose = vi.fn();
  const onDeleted = vi.fn();
  render(
    <SWRConfig value={{ provider: () => new Map() }}>
      <NotificationsProvider>
        <DeleteSourceDialog
          source={source}
          onClose={onClose}
          onDeleted={onDeleted}
        />
      </NotificationsProvider>
    </SWRConfig>,
  );
  return { onClose, onDeleted };
}

const radio = (name) => screen.getByRole("radio", { name });
const help = (input) =>
  document.getElementById(input.getAttribute("aria-describedby")).textContent;

describe("deleting a local source", () => {
  it("keeps the files by default, saying the folder stays reserved, and sends no files parameter", async () => {
    const calls = stubApi({ "DELETE sources/7/": () => [204] });
    const { onDeleted } = renderDialog();
    expect(
      screen.getByRole("group", { name: "What becomes of the files" }),
    ).toBeTruthy();
    const keep = radio("Keep the files");
    expect(keep.checked).toBe(true);
    expect(help(keep)).toBe(
      "They stay in /srv/shares/archive, and the folder stays reserved for this organisation: no other organisation can use it until the appliance's operator releases it.",
    );
    expect(help(radio("Delete the folder and all its files"))).toMatch(
      /This cannot be undone\.$/,
    );
    fireEvent.click(screen.getByRole("button", { name: "Delete the source" }));
    await waitFor(() => expect(onDeleted).toHaveBeenCalledWith("keep"));
    const sent = calls.find((c) => c.method === "DELETE");
    expect(sent.path).toBe("sources/7/");
    expect(sent.url.search).toBe("");
  });

  it("sends ?files=delete only when the admin chooses it, the button saying so", async () => {
    const calls = stubApi({ "DELETE sources/7/": () => [204] });
    const { onDeleted } = renderDialog();
    fireEvent.click(radio("Delete the folder and all its files"));
    expect(screen.queryByRole("button", { name: "Delete the source" })).toBe(
      null,
    );
    fireEvent.click(
      screen.getByRole("button", { name: "Delete the source and its files" }),
    );
    await waitFor(() => expect(onDeleted).toHaveBeenCalledWith("delete"));
    const sent = calls.find((c) => c.method === "DELETE");
    expect(sent.url.searchParams.get("files")).toBe("delete");
  });

  it("shows a refusal in the dialog and as a notification, and stays open", async () => {
    const detail =
      "The folder /srv/shares/archive holds the source Inner's folder: its files are not only Archive's, so they are not removed. Delete the source and keep its files instead.";
    stubApi({ "DELETE sources/7/": () => [400, { detail }] });
    const { onDeleted } = renderDialog();
    fireEvent.click(radio("Delete the folder and all its files"));
    fireEvent.click(
      screen.getByRole("button", { name: "Delete the source and its files" }),
    );
    expect(await screen.findByRole("alert")).toHaveProperty(
      "textContent",
      detail,
    );
    expect((await screen.findByTestId("notification")).textContent).toBe(
      detail,
    );
    expect(onDeleted).not.toHaveBeenCalled();
    expect(
      screen.getByRole("dialog", { name: "Delete the source" }),
    ).toBeTruthy();
  });

  it("offers no removal of a read-only source's files", () => {
    renderDialog({ ...ARCHIVE, read_only: true });
    const remove = radio("Delete the folder and all its files");
    expect(remove.disabled).toBe(true);
    expect(help(remove)).toBe(
      "Archive is read-only: the appliance does not remove its files.",
    );
  });
});

describe("what a local source's files may become", () => {
  it("says a folder inside the organisation's own one stays the organisation's, not reserved", () => {
    const [keep, remove] = fileChoices({
      ...ARCHIVE,
      config: { path: "projects/2030" },
    });
    expect(keep.help).toBe(
      "They stay in projects/2030, inside the organisation's own folder, which no other organisation can use.",
    );
    expect(remove.disabled).toBe(false);
    expect(remove.help).toBe(
      "The folder projects/2030 and everything in it are removed. This cannot be undone.",
    );
  });

  it("never offers to remove the organisation's own folder", () => {
    const [keep, remove] = fileChoices({ ...ARCHIVE, config: { path: "." } });
    expect(keep.help).toBe("They stay in the organisation's own folder.");
    expect(remove.disabled).toBe(true);
  });
});
