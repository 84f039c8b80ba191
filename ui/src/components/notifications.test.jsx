import { act, fireEvent, render, screen } from "@testing-library/react";
import { useEffect } from "react";
import { describe, expect, it, vi } from "vitest";
import {
  DEFAULTS,
  errorText,
  NotificationsProvider,
  POSITIONS,
  TYPES,
  useNotify,
} from "./notifications.jsx";

const grabbed = {};
function Grab() {
  const notify = useNotify();
  useEffect(() => {
    grabbed.notify = notify;
  }, [notify]);
  return null;
}
const notify = (...args) => grabbed.notify(...args);
const mount = () =>
  render(
    <NotificationsProvider>
      <Grab />
    </NotificationsProvider>,
  );

describe("notifications", () => {
  it("have the spec's positions, types and defaults", () => {
    expect(POSITIONS).toEqual([
      "top-left",
      "top-right",
      "bottom-left",
      "bottom-right",
      "top",
      "bottom",
      "left",
      "right",
      "center",
    ]);
    expect(TYPES).toEqual([
      "positive",
      "negative",
      "warning",
      "info",
      "ongoing",
    ]);
    expect(DEFAULTS).toEqual({
      type: "info",
      timeout: 5000,
      position: "bottom-right",
    });
  });

  it("show bottom-right and go after 5000 ms by default", () => {
    vi.useFakeTimers();
    mount();
    act(() => notify("Saved", { type: "positive" }));
    const note = screen.getByText("Saved").closest(".note");
    expect(note.className).toContain("positive");
    expect(note.parentElement.className).toContain("bottom-right");
    act(() => vi.advanceTimersByTime(4999));
    expect(screen.queryByText("Saved")).not.toBeNull();
    act(() => vi.advanceTimersByTime(1));
    expect(screen.queryByText("Saved")).toBeNull();
  });

  it("stay with timeout 0 until closed, at the position asked", () => {
    vi.useFakeTimers();
    mount();
    act(() =>
      notify("Working", { type: "ongoing", timeout: 0, position: "top" }),
    );
    act(() => vi.advanceTimersByTime(60_000));
    const note = screen.getByText("Working").closest(".note");
    expect(note.parentElement.className).toContain("top");
    fireEvent.click(screen.getByRole("button", { name: "Close" }));
    expect(screen.queryByText("Working")).toBeNull();
  });

  it("can be closed by the function notify returns", () => {
    mount();
    let close;
    act(() => {
      close = notify("Exporting", { type: "ongoing", timeout: 0 });
    });
    expect(screen.queryByText("Exporting")).not.toBeNull();
    act(() => close());
    expect(screen.queryByText("Exporting")).toBeNull();
  });

  it("show text, never markup", () => {
    mount();
    act(() => notify("<img src=x onerror=alert(1)>"));
    expect(screen.getByText("<img src=x onerror=alert(1)>")).toBeTruthy();
    expect(document.querySelector(".note img")).toBeNull();
  });

  it("word API errors by their detail, else their first field", () => {
    expect(errorText({ data: { detail: "Organisation is deleted" } })).toBe(
      "Organisation is deleted",
    );
    expect(errorText({ data: { username: ["This username is taken."] } })).toBe(
      "Username: This username is taken.",
    );
    expect(errorText(new Error("offline"))).toBe("offline");
  });
});
