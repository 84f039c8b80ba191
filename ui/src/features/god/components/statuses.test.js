import { describe, expect, it } from "vitest";
import { organisationStatus } from "./statuses.js";

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
