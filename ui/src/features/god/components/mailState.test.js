import { describe, expect, it } from "vitest";
import { mailState } from "./mailState.js";

const base = {
  host: "localhost",
  port: 25,
  starttls: false,
  sender: "portal@example.com",
  authenticated: false,
  last_success_at: null,
  last_success_to: null,
  last_error_at: null,
  last_error: null,
  last_error_to: null,
  pending: 0,
};

describe("the state of outbound mail", () => {
  it("says nothing was sent yet", () => {
    const shown = mailState(base);
    expect(shown.tone).toBe("warning");
    expect(shown.rows).toEqual([
      ["Mail server", "localhost:25"],
      ["Sender", "portal@example.com"],
      ["Last delivered", "Nothing since the appliance started"],
    ]);
  });

  it("says the last mail failed, with when, to whom and why", () => {
    const shown = mailState({
      ...base,
      last_success_at: "2030-01-01T10:00:00Z",
      last_success_to: "a@example.com",
      last_error_at: "2030-01-02T10:00:00Z",
      last_error: "Connection refused",
      last_error_to: "b@example.com",
      pending: 2,
    });
    expect(shown.tone).toBe("negative");
    expect(shown.rows[3][1]).toMatch(/ to b@example.com: Connection refused$/);
    expect(shown.rows[4]).toEqual(["Waiting", "2 messages to be retried"]);
  });

  it("says mail works when the last attempt went through", () => {
    const shown = mailState({
      ...base,
      starttls: true,
      authenticated: true,
      last_error_at: "2030-01-01T10:00:00Z",
      last_error: "timeout",
      last_error_to: "b@example.com",
      last_success_at: "2030-01-02T10:00:00Z",
      last_success_to: "a@example.com",
    });
    expect(shown.tone).toBe("positive");
    expect(shown.rows[0]).toEqual([
      "Mail server",
      "localhost:25 with STARTTLS, signed in",
    ]);
  });
});
