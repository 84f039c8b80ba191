import { describe, expect, it } from "vitest";
import { profileBody, profileValues } from "./ProfileForm.jsx";

describe("the profile form", () => {
  it("sends a new profile with lists from lines and no empty password", () => {
    const values = {
      ...profileValues(null),
      username: " petra ",
      email: "petra@example.com",
      ssh_keys: "ssh-ed25519 AAAA one\n\n ssh-ed25519 BBBB two ",
      ip_allow: "203.0.113.0/24",
      quota_bytes: "1000",
    };
    const body = profileBody(values, true);
    expect(body).toMatchObject({
      username: "petra",
      ssh_keys: ["ssh-ed25519 AAAA one", "ssh-ed25519 BBBB two"],
      ip_allow: ["203.0.113.0/24"],
      quota_bytes: 1000,
      quota_files: null,
      expires_at: null,
    });
    expect(body).not.toHaveProperty("password");
    expect(body).not.toHaveProperty("source"); // the organisation's default source
    expect(body).not.toHaveProperty("home"); // the server makes /<username>
  });

  it("keeps an edited profile's source and home, and sends a new password only when typed", () => {
    const profile = {
      id: 3,
      username: "olga",
      email: "o@example.com",
      source: 2,
      home: "/olga",
      active: true,
    };
    const values = profileValues(profile);
    expect(profileBody(values, false)).toMatchObject({
      source: 2,
      home: "/olga",
    });
    expect(
      profileBody({ ...values, password: "new-password-1" }, false).password,
    ).toBe("new-password-1");
    expect(profileBody({ ...values, source: "" }, false).source).toBeNull();
  });
});
