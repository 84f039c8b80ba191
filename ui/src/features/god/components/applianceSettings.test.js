import { describe, expect, it } from "vitest";
import {
  hostChanges,
  lockedText,
  mailChanges,
  mailValues,
} from "./applianceSettings.js";
import { SETTINGS } from "./settingsFixture.js";

describe("the appliance's settings in the console", () => {
  it("says where the config sets a setting, and nothing for one the console may change", () => {
    expect(lockedText(SETTINGS.smtp.host)).toBe(
      "Set in the config file (environment variable APPLIANCE_SMTP_HOST): change it there.",
    );
    expect(lockedText(SETTINGS.smtp.port)).toBeNull();
  });

  it("never fills in the password", () => {
    const values = mailValues(SETTINGS);
    expect(values["smtp.password"]).toBe("");
    expect(values["smtp.port"]).toBe("25");
  });

  it("sends what the config does not set, the port as a number, the password only when typed", () => {
    const values = {
      ...mailValues(SETTINGS),
      "smtp.host": "smtp.example.com",
      "smtp.port": " 587 ",
      "smtp.starttls": true,
      "smtp.sender": " portal@example.com ",
    };
    expect(mailChanges(values, SETTINGS)).toEqual({
      smtp: {
        port: 587,
        starttls: true,
        sender: "portal@example.com",
        username: "",
      },
    });
    const typed = { ...values, "smtp.password": "s3cret", "smtp.port": "x" };
    expect(mailChanges(typed, SETTINGS).smtp).toMatchObject({
      password: "s3cret",
      port: "x", // for the server to name the field
    });
  });

  it("sends an empty host name as back to the default", () => {
    expect(hostChanges(" files.example.com ")).toEqual({
      server: { public_hostname: "files.example.com" },
    });
    expect(hostChanges("  ")).toEqual({ server: { public_hostname: null } });
  });
});
