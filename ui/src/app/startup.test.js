import { describe, expect, it, vi } from "vitest";
import { startUp } from "./startup.js";

describe("start-up", () => {
  it("runs the steps in order, then mounts", async () => {
    const order = [];
    const mounted = await startUp(
      [
        () => order.push("http client"),
        async () => order.push("error reporting"),
      ],
      () => order.push("mount"),
    );
    expect(mounted).toBe(true);
    expect(order).toEqual(["http client", "error reporting", "mount"]);
  });

  it("logs a failing step and does not mount", async () => {
    const mount = vi.fn();
    const log = vi.fn();
    const redirect = vi.fn();
    const failure = new Error("broken");
    expect(
      await startUp([() => Promise.reject(failure)], mount, { log, redirect }),
    ).toBe(false);
    expect(mount).not.toHaveBeenCalled();
    expect(redirect).not.toHaveBeenCalled();
    expect(log).toHaveBeenCalledWith("start-up failed:", failure);
  });

  it("redirects instead when the error carries a URL", async () => {
    const mount = vi.fn();
    const log = vi.fn();
    const redirect = vi.fn();
    const error = Object.assign(new Error("moved"), { url: "/maintenance" });
    await startUp(
      [
        () => {
          throw error;
        },
      ],
      mount,
      { log, redirect },
    );
    expect(redirect).toHaveBeenCalledWith("/maintenance");
    expect(mount).not.toHaveBeenCalled();
    expect(log).not.toHaveBeenCalled();
  });
});
