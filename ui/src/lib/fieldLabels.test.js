import { describe, expect, it } from "vitest";
import { fieldLabel, fieldMessage } from "./fieldLabels.js";

describe("field errors in words", () => {
  it("name a field by its label, never its API name", () => {
    expect(fieldMessage("new_password1", ["This password is too short."])).toBe(
      "New password: This password is too short.",
    );
    expect(fieldMessage("quota_bytes", ["Too big."], {})).toBe(
      "Quota (bytes): Too big.",
    );
    expect(fieldMessage("some_new_field", "Wrong.")).toBe(
      "Some new field: Wrong.",
    );
  });

  it("prefer the form's own label, for nested fields too", () => {
    expect(fieldLabel("new_password2", { new_password2: "Again" })).toBe(
      "Again",
    );
    expect(fieldLabel("config.port", {})).toBe("Port");
    expect(fieldLabel("config.bucket", { bucket: "Bucket name" })).toBe(
      "Bucket name",
    );
  });

  it("leave a link's token and detail without a label", () => {
    expect(
      fieldMessage("token", ["This link is invalid or has expired."]),
    ).toBe("This link is invalid or has expired.");
    expect(fieldMessage("detail", ["Nope."])).toBe("Nope.");
  });
});
