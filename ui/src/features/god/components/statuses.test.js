import { describe, expect, it } from "vitest";
import { organisationStatus, statusChangeText } from "./statuses.js";

const date = (iso) =>
  new Date(iso).toLocaleDateString([], { dateStyle: "medium" });

describe("an organisation's status in the operator's list", () => {
  it("shows an ended trial as expired, with its date, not as days left", () => {
    const ended = "2030-01-03T10:00:00Z";
    for (const status of ["trial", "payment_missing"]) {
      expect(
        organisationStatus({
          status,
          on_trial: status === "trial",
          days_left_on_trial: 0,
          trial_ends_at: ended,
          trial_expired: true,
        }),
      ).toEqual({
        text: "Trial expired",
        tone: "status-payment_missing",
        trial: `Ended ${date(ended)}`,
      });
    }
  });

  it("shows a running trial's days left and end", () => {
    const ends = "2030-01-13T10:00:00Z";
    expect(
      organisationStatus({
        status: "trial",
        on_trial: true,
        days_left_on_trial: 1,
        trial_ends_at: ends,
        trial_expired: false,
      }),
    ).toEqual({
      text: "Trial",
      tone: "status-trial",
      trial: `1 day left (ends ${date(ends)})`,
    });
  });

  it("shows other statuses plainly", () => {
    expect(
      organisationStatus({
        status: "active",
        on_trial: false,
        trial_ends_at: null,
      }),
    ).toEqual({ text: "Active", tone: "status-active", trial: "" });
  });
});

describe("the notification after the operator changed an organisation", () => {
  it("says an ended trial ended, as its members meet it, not that it is now trial", () => {
    const ended = "2020-01-03T10:00:00Z";
    const text = statusChangeText({
      name: "Lapsed",
      status: "trial",
      on_trial: true,
      trial_ends_at: ended,
      trial_expired: true,
    });
    expect(text).toBe(`Lapsed's trial ended ${date(ended)}: payment missing`);
    expect(text).not.toContain("now trial");
  });

  it("says the new status otherwise", () => {
    expect(
      statusChangeText({ name: "Globex", status: "payment_missing" }),
    ).toBe("Globex is now payment missing");
    expect(
      statusChangeText({
        name: "Globex",
        status: "trial",
        trial_ends_at: "2099-01-01T00:00:00Z",
        trial_expired: false,
      }),
    ).toBe("Globex is now trial");
  });
});
