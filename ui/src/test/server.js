// A stand-in for the API in unit tests: routes by method and path to replies.
import { vi } from "vitest";

/** Stub fetch with `routes` {"GET branding/": (url) => [status, body] | Promise}; [204]: no body. */
export function stubApi(routes) {
  const calls = [];
  const fetch = vi.fn(async (input, init = {}) => {
    const url = new URL(String(input));
    const path = url.pathname.replace(/^\/api\/portal\//, "");
    const method = (init.method || "GET").toUpperCase();
    calls.push({ method, path, url, init });
    const handler = routes[`${method} ${path}`];
    if (!handler)
      return new Response(JSON.stringify({ detail: "Not found." }), {
        status: 404,
      });
    const [status, body] = await handler(url, init);
    return new Response(body === undefined ? null : JSON.stringify(body), {
      status,
    });
  });
  vi.stubGlobal("fetch", fetch);
  return calls;
}
