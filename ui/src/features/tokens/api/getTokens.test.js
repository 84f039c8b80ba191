import { describe, expect, it } from "vitest";
import { stubApi } from "../../../test/server.js";
import { getTokens, tokenSearch } from "./getTokens.js";

describe("the token list's search", () => {
  it("sends a pasted token's prefix, never its secret", async () => {
    expect(tokenSearch("apl_0a1b2c3d_s3cr3t-Value_with_underscores")).toBe(
      "apl_0a1b2c3d",
    );
    expect(tokenSearch("backup")).toBe("backup");
    expect(tokenSearch("apl_0a1b")).toBe("apl_0a1b");
    const calls = stubApi({
      "GET tokens/": () => [200, { count: 0, results: [] }],
    });
    await getTokens({ page: 1, search: "apl_0a1b2c3d_s3cr3t" });
    expect(calls[0].url.searchParams.get("search")).toBe("apl_0a1b2c3d");
    expect(calls[0].url.toString()).not.toContain("s3cr3t");
  });
});
