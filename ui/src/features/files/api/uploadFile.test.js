import { describe, expect, it } from "vitest";
import { secondsLeft } from "../../../lib/api.js";
import { asApiError, retryable } from "./uploadFile.js";

const jwt = (payload) =>
  `h.${btoa(JSON.stringify(payload)).replace(/=+$/, "")}.s`;

describe("resumable uploads", () => {
  it("read how long an access token has left", () => {
    expect(secondsLeft(jwt({ exp: 1000 }), 940_000)).toBe(60);
    expect(secondsLeft("not-a-jwt")).toBe(Infinity);
  });

  it("try again after network, server, conflict and token failures, not after refusals", () => {
    for (const status of [0, 401, 409, 423, 500, 503])
      expect(retryable(status)).toBe(true);
    for (const status of [400, 403, 404, 410, 413, 507])
      expect(retryable(status)).toBe(false);
  });

  it("report the server's detail", () => {
    const response = {
      getStatus: () => 507,
      getBody: () => '{"detail": "The quota is used up."}',
    };
    const error = asApiError({ originalResponse: response });
    expect(error.status).toBe(507);
    expect(error.data.detail).toBe("The quota is used up.");
    expect(asApiError(new Error("offline")).status).toBe(0);
  });

  it("report the detail a bodiless HEAD reply carries in Upload-Error", () => {
    const response = {
      getStatus: () => 423,
      getBody: () => "",
      getHeader: (name) =>
        name === "Upload-Error" ? "The source %C3%A9 is down." : null,
    };
    const error = asApiError({ originalResponse: response });
    expect(error.status).toBe(423);
    expect(error.data.detail).toBe("The source é is down.");
  });
});
