import { afterEach, describe, expect, it, vi } from "vitest";
import { api } from "../../lib/api.js";
import { getBans, liftBan } from "./api/bans.js";
import { banText } from "./components/BansSection.jsx";

afterEach(() => vi.restoreAllMocks());

describe("bans", () => {
  it("read as what was guessed and until when", () => {
    const text = banText({
      address: "192.0.2.7",
      until: "2026-11-23T16:30:00Z",
      offences: 2,
      kind: "address",
      why: "wrong passwords for alice, bob: every sign-in from this address is refused",
      usernames: ["alice", "bob"],
    });
    expect(text).toMatch(
      /^Wrong passwords for alice, bob: every sign-in from this address is refused; until /,
    );
    expect(text).toMatch(/\(offence 2\)$/);
    expect(
      banText({ until: "2026-11-23T16:30:00Z", offences: 1, usernames: ["a"] }),
    ).not.toMatch(/offence/);
  });

  it("are listed and lifted by address, an IPv6 one escaped", async () => {
    const get = vi.spyOn(api, "get").mockResolvedValue({ results: [] });
    const del = vi.spyOn(api, "delete").mockResolvedValue(null);
    await getBans();
    expect(get).toHaveBeenCalledWith("bans/");
    await liftBan("2001:db8::1");
    expect(del).toHaveBeenCalledWith("bans/2001%3Adb8%3A%3A1/");
  });
});
