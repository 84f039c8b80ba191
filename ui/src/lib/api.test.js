import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  api,
  backendBase,
  getSession,
  setSession,
  setupHttpClient,
  SESSION_KEY,
  UNREACHABLE,
} from "./api.js";

function reply(status, body) {
  return Promise.resolve(
    new Response(body === undefined ? "" : JSON.stringify(body), { status }),
  );
}

const TOKEN_NOT_VALID = {
  detail: "Given token not valid for any token type",
  code: "token_not_valid",
  messages: [{}],
};

describe("the HTTP client", () => {
  let navigate;
  beforeEach(() => {
    localStorage.clear();
    navigate = vi.fn();
    setupHttpClient({ navigate });
    window.history.pushState({}, "", "/fileviewer");
  });
  afterEach(() => vi.unstubAllGlobals());

  it("maps page port 9000 to 8000 and keeps the protocol", () => {
    expect(
      backendBase({
        protocol: "https:",
        hostname: "files.example.com",
        port: "9000",
      }),
    ).toBe("https://files.example.com:8000");
    expect(
      backendBase({ protocol: "http:", hostname: "h", port: "8443" }),
    ).toBe("http://h:8443");
    expect(backendBase({ protocol: "https:", hostname: "h", port: "" })).toBe(
      "https://h",
    );
  });

  it("sends the Bearer token from authUser, credentials and JSON", async () => {
    setSession({ access: "A1", refresh: "R1" });
    const fetch = vi.fn(() => reply(200, { ok: true }));
    vi.stubGlobal("fetch", fetch);
    expect(await api.post("things/", { a: 1 })).toEqual({ ok: true });
    const [url, init] = fetch.mock.calls[0];
    expect(url).toMatch(/\/api\/portal\/things\/$/);
    expect(init.credentials).toBe("include");
    expect(init.headers.Authorization).toBe("Bearer A1");
    expect(init.headers["Content-Type"]).toBe("application/json");
    expect(init.body).toBe('{"a":1}');
  });

  it("refreshes on token_not_valid, merges the reply and retries once", async () => {
    setSession({ access: "old", refresh: "R1", username: "u" });
    const fetch = vi
      .fn()
      .mockImplementationOnce(() => reply(401, TOKEN_NOT_VALID))
      .mockImplementationOnce(() =>
        reply(200, { access: "new", refresh: "R2" }),
      )
      .mockImplementationOnce(() => reply(200, { done: true }));
    vi.stubGlobal("fetch", fetch);
    expect(await api.get("organisation/")).toEqual({ done: true });
    expect(fetch.mock.calls[1][0]).toMatch(/token\/refresh\/$/);
    expect(fetch.mock.calls[2][1].headers.Authorization).toBe("Bearer new");
    expect(getSession()).toEqual({
      access: "new",
      refresh: "R2",
      username: "u",
    });
  });

  it("shares one refresh between calls that fail together", async () => {
    setSession({ access: "old", refresh: "R1" });
    let refreshes = 0;
    vi.stubGlobal(
      "fetch",
      vi.fn((url, init) => {
        if (url.endsWith("token/refresh/")) {
          refreshes += 1;
          return reply(200, { access: "new", refresh: "R2" });
        }
        return init.headers.Authorization === "Bearer new"
          ? reply(200, { ok: url })
          : reply(401, TOKEN_NOT_VALID);
      }),
    );
    const results = await Promise.all([
      api.get("a/"),
      api.get("b/"),
      api.get("c/"),
    ]);
    expect(results.map((r) => r.ok.slice(-2))).toEqual(["a/", "b/", "c/"]);
    expect(refreshes).toBe(1);
    expect(navigate).not.toHaveBeenCalled();
  });

  it("clears the session and goes to login when the refresh fails", async () => {
    setSession({ access: "old", refresh: "R1" });
    vi.stubGlobal(
      "fetch",
      vi
        .fn()
        .mockImplementationOnce(() => reply(401, TOKEN_NOT_VALID))
        .mockImplementationOnce(() => reply(401, {})),
    );
    await expect(api.get("organisation/")).rejects.toMatchObject({
      status: 401,
    });
    expect(localStorage.getItem(SESSION_KEY)).toBeNull();
    expect(navigate).toHaveBeenCalledWith("/auth/login");
  });

  it("retries only once", async () => {
    setSession({ access: "old", refresh: "R1" });
    const fetch = vi
      .fn()
      .mockImplementationOnce(() => reply(401, TOKEN_NOT_VALID))
      .mockImplementationOnce(() =>
        reply(200, { access: "new", refresh: "R2" }),
      )
      .mockImplementationOnce(() => reply(401, TOKEN_NOT_VALID));
    vi.stubGlobal("fetch", fetch);
    await expect(api.get("organisation/")).rejects.toMatchObject({
      status: 401,
    });
    expect(fetch).toHaveBeenCalledTimes(3);
    expect(navigate).toHaveBeenCalledWith("/auth/login");
  });

  it("checks initialized/ after a GET 500 and goes to login when it is false", async () => {
    vi.stubGlobal(
      "fetch",
      vi
        .fn()
        .mockImplementationOnce(() => reply(500, {}))
        .mockImplementationOnce(() => reply(200, { initialized: false })),
    );
    await expect(api.get("dashboard/overview/")).rejects.toMatchObject({
      status: 500,
    });
    expect(navigate).toHaveBeenCalledWith("/auth/login");
  });

  it("stays put after a GET 500 when the appliance is initialized", async () => {
    vi.stubGlobal(
      "fetch",
      vi
        .fn()
        .mockImplementationOnce(() => reply(500, {}))
        .mockImplementationOnce(() => reply(200, { initialized: true })),
    );
    await expect(api.get("dashboard/overview/")).rejects.toMatchObject({
      status: 500,
    });
    expect(navigate).not.toHaveBeenCalled();
  });

  it("sends a missing payment to /auth/billing and a deleted organisation to login", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn(() => reply(403, { detail: "Organisation payment missing" })),
    );
    await expect(api.get("organisation/")).rejects.toMatchObject({
      status: 403,
    });
    expect(navigate).toHaveBeenLastCalledWith("/auth/billing");
    vi.stubGlobal(
      "fetch",
      vi.fn(() => reply(403, { detail: "Organisation is deleted" })),
    );
    await expect(api.get("organisation/")).rejects.toMatchObject({
      status: 403,
    });
    expect(navigate).toHaveBeenLastCalledWith("/auth/login");
  });

  it("does not redirect on the login page and re-throws every error", async () => {
    window.history.pushState({}, "", "/auth/login");
    vi.stubGlobal(
      "fetch",
      vi.fn(() => reply(403, { detail: "Organisation payment missing" })),
    );
    await expect(api.get("organisation/")).rejects.toMatchObject({
      status: 403,
    });
    vi.stubGlobal(
      "fetch",
      vi.fn(() => reply(400, { name: ["Enter a name."] })),
    );
    await expect(api.post("profiles/", {})).rejects.toMatchObject({
      status: 400,
      data: { name: ["Enter a name."] },
    });
    expect(navigate).not.toHaveBeenCalled();
  });

  it("says the appliance could not be reached when no reply comes, not the browser's words", async () => {
    setSession({ access: "A1", refresh: "R1" });
    vi.stubGlobal(
      "fetch",
      vi.fn(() => Promise.reject(new TypeError("Failed to fetch"))),
    );
    const failure = api.post("files/mkdir/", { path: "/x" });
    await expect(failure).rejects.toMatchObject({
      status: 0,
      data: { detail: UNREACHABLE },
      message: UNREACHABLE,
    });
    expect(navigate).not.toHaveBeenCalled();
    expect(getSession()).toMatchObject({ access: "A1" }); // the session stays
  });

  it("renews an access token about to run out before sending it", async () => {
    const soon = Math.floor(Date.now() / 1000) + 30; // inside the margin
    setSession({ access: jwt({ exp: soon }), refresh: "R1" });
    const fetch = vi.fn((url) =>
      url.endsWith("token/refresh/")
        ? reply(200, { access: "new", refresh: "R2" })
        : reply(200, { ok: true }),
    );
    vi.stubGlobal("fetch", fetch);
    expect(await api.get("organisation/")).toEqual({ ok: true });
    expect(fetch.mock.calls[0][0]).toMatch(/token\/refresh\/$/);
    expect(fetch.mock.calls[1][1].headers.Authorization).toBe("Bearer new");
    expect(fetch).toHaveBeenCalledTimes(2);
  });

  it("renews once a request: a renewed token refused too ends the session", async () => {
    const soon = Math.floor(Date.now() / 1000) + 30;
    setSession({ access: jwt({ exp: soon }), refresh: "R1" });
    const fetch = vi.fn((url) =>
      url.endsWith("token/refresh/")
        ? reply(200, { access: "new", refresh: "R2" })
        : reply(401, TOKEN_NOT_VALID),
    );
    vi.stubGlobal("fetch", fetch);
    await expect(api.get("organisation/")).rejects.toMatchObject({
      status: 401,
    });
    expect(fetch).toHaveBeenCalledTimes(2); // the renewal, the call: no second refresh
    expect(getSession()).toBeNull();
    expect(navigate).toHaveBeenCalledWith("/auth/login");
  });

  it("uploads under the same policy: refresh on token_not_valid, send once more", async () => {
    setSession({ access: "old", refresh: "R1" });
    vi.stubGlobal(
      "fetch",
      vi.fn(() => reply(200, { access: "new", refresh: "R2" })),
    );
    const sent = stubXhr((authorization) =>
      authorization === "Bearer new"
        ? [201, { stored: true }]
        : [401, TOKEN_NOT_VALID],
    );
    const form = new FormData();
    expect(await api.upload("organisation/1/logo/", form)).toEqual({
      stored: true,
    });
    expect(sent.map((s) => [s.authorization, s.body])).toEqual([
      ["Bearer old", form],
      ["Bearer new", form],
    ]);
    expect(navigate).not.toHaveBeenCalled();
  });

  it("ends the session when an upload's refresh fails, and says why to the caller", async () => {
    setSession({ access: "old", refresh: "R1" });
    vi.stubGlobal(
      "fetch",
      vi.fn(() => reply(401, TOKEN_NOT_VALID)),
    );
    const sent = stubXhr(() => [401, TOKEN_NOT_VALID]);
    await expect(
      api.upload("organisation/1/logo/", new FormData()),
    ).rejects.toMatchObject({ status: 401 });
    expect(sent).toHaveLength(1);
    expect(getSession()).toBeNull();
    expect(navigate).toHaveBeenCalledWith("/auth/login");
  });

  it("sends anonymous uploads without a token and never refreshes them", async () => {
    setSession({ access: "old", refresh: "R1" });
    const fetch = vi.fn();
    vi.stubGlobal("fetch", fetch);
    const sent = stubXhr(() => [401, TOKEN_NOT_VALID]);
    await expect(
      api.upload("shared/t/upload/", new FormData(), { anonymous: true }),
    ).rejects.toMatchObject({ status: 401 });
    expect(sent.map((s) => s.authorization)).toEqual([null]);
    expect(fetch).not.toHaveBeenCalled();
    expect(getSession()).toMatchObject({ access: "old" });
  });
});

const jwt = (payload) =>
  `h.${btoa(JSON.stringify(payload)).replace(/=+$/, "")}.s`;

/** Stub XMLHttpRequest: `answer(authorization)` gives [status, body] for each send. */
function stubXhr(answer) {
  const sent = [];
  class FakeXhr {
    constructor() {
      this.headers = {};
      this.upload = {};
    }
    open(method, url) {
      Object.assign(this, { method, url });
    }
    setRequestHeader(name, value) {
      this.headers[name] = value;
    }
    abort() {
      if (this.onabort) this.onabort();
    }
    send(body) {
      const authorization = this.headers.Authorization || null;
      sent.push({ authorization, body });
      const [status, data] = answer(authorization);
      this.status = status;
      this.responseText = JSON.stringify(data);
      queueMicrotask(() => this.onload());
    }
  }
  vi.stubGlobal("XMLHttpRequest", FakeXhr);
  return sent;
}
