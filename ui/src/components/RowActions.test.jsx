import { fireEvent, render, screen, within } from "@testing-library/react";
import { createMemoryRouter, RouterProvider } from "react-router";
import { describe, expect, it, vi } from "vitest";
import { DataTable } from "./lists.jsx";
import { RowActions } from "./RowActions.jsx";

function renderTable(columns, rows) {
  const router = createMemoryRouter([
    {
      path: "/",
      element: <DataTable columns={columns} rows={rows} caption="Things" />,
    },
    { path: "/things/:id", element: <p>a thing</p> },
  ]);
  render(<RouterProvider router={router} />);
  return router;
}

describe("a list's row actions", () => {
  it("are buttons and links on wide screens and the same in one Actions menu on phones", () => {
    const change = vi.fn();
    renderTable(
      [
        ["Name", (r) => r.name],
        ["Note", (r) => r.note],
        [
          "Actions",
          (r) => (
            <RowActions
              name={r.name}
              actions={[
                {
                  label: "Change",
                  ariaLabel: `Change ${r.name}`,
                  onSelect: () => change(r),
                },
                { label: "Open", to: `/things/${r.id}` },
                null,
                {
                  label: "Delete",
                  danger: true,
                  disabled: true,
                  title: "Not yours",
                  onSelect: () => {},
                },
              ]}
            />
          ),
          { actions: true },
        ],
      ],
      [{ id: 1, name: "Globex", note: "" }],
    );
    const [, note, actions] = screen.getAllByRole("cell");
    // a phone's card leaves an empty cell out, and puts the actions cell at its corner
    expect(note.className).toBe("empty");
    expect(actions.className).toBe("actions-cell");
    expect(
      screen.getByRole("columnheader", { name: "Actions" }).className,
    ).toBe("actions-cell");
    const inline = actions.querySelector(".inline-actions");
    fireEvent.click(
      within(inline).getByRole("button", { name: "Change Globex" }),
    );
    expect(change).toHaveBeenCalledWith({ id: 1, name: "Globex", note: "" });
    expect(
      within(inline).getByRole("link", { name: "Open" }).getAttribute("href"),
    ).toBe("/things/1");
    expect(
      within(inline).getByRole("button", { name: "Delete" }).disabled,
    ).toBe(true);

    const menuButton = screen.getByRole("button", {
      name: "Actions for Globex",
    });
    expect(menuButton.closest(".menu-actions")).toBeTruthy(); // CSS shows it on phones only
    fireEvent.click(menuButton);
    const menu = screen.getByRole("menu", { name: "Actions for Globex" });
    const items = within(menu).getAllByRole("menuitem");
    expect(items.map((i) => i.textContent)).toEqual([
      "Change",
      "Open",
      "Delete",
    ]);
    expect(items[2].disabled).toBe(true);
    expect(items[2].title).toBe("Not yours");
    fireEvent.click(items[0]);
    expect(change).toHaveBeenCalledTimes(2);
    expect(screen.queryByRole("menu")).toBeNull();
  });

  it("can be a menu only, at every width, and nothing when there are none", () => {
    renderTable(
      [
        ["Name", (r) => r.name],
        [
          "Actions",
          (r) => <RowActions name={r.name} actions={r.actions} menuOnly />,
          { actions: true },
        ],
      ],
      [
        {
          id: 1,
          name: "one",
          actions: [{ label: "Narrow", onSelect: () => {} }],
        },
        { id: 2, name: "two", actions: [] },
      ],
    );
    expect(document.querySelector(".inline-actions")).toBeNull();
    const button = screen.getByRole("button", { name: "Actions for one" });
    expect(button.closest(".menu-actions")).toBeNull();
    expect(
      screen.queryByRole("button", { name: "Actions for two" }),
    ).toBeNull();
  });
});
