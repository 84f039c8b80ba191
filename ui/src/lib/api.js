// The one HTTP client (console-spec §4, §7, §8): backend host, credentials, JSON,
// Bearer token from `authUser`, the one token policy (renew before expiry, refresh
// and retry once on token_not_valid, else sign out) for JSON calls and uploads
// alike, the 500 and 403 redirects, errors re-thrown to the caller.

export const SESSION_KEY = "authUser";

/** What a call that got no reply at all says. */
export const UNREACHABLE =
  "The appliance could not be reached. Check the connection and try again.";

export class ApiError extends Error {
  constructor(status, data, options) {
    super(
      (data && (data.detail || JSON.stringify(data))) || `HTTP ${status}`,
      options,
    );
    this.status = status;
    this.data = data || {};
  }
}

let navigate = (path) => window.location.assign(path);

/** Step one of start-up: tell the client how to move between routes. */
export function setupHttpClient(options = {}) {
  if (options.navigate) navigate = options.navigate;
}

/** The backend: the page's host with port 9000 replaced by 8000, same protocol. */
export function backendBase(location = window.location) {
  const port = location.port === "9000" ? "8000" : location.port;
  return `${location.protocol}//${location.hostname}${port ? `:${port}` : ""}`;
}

export function getSession() {
  try {
    return JSON.parse(localStorage.getItem(SESSION_KEY)) || null;
  } catch {
    return null;
  }
}

export function setSession(session) {
  localStorage.setItem(SESSION_KEY, JSON.stringify(session));
}

export function clearSession() {
  localStorage.removeItem(SESSION_KEY);
}

function onLoginPage() {
  return window.location.pathname.startsWith("/auth/login");
}

export function apiUrl(path, params) {
  const url = new URL(`${backendBase()}/api/portal/${path.replace(/^\//, "")}`);
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "")
      url.searchParams.set(key, value);
  }
  return url.toString();
}

async function readBody(response) {
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return { detail: text };
  }
}

let refreshing = null;

/** One refresh at a time: calls failing together share it (a refresh token works once). */
function refreshSession() {
  if (!refreshing)
    refreshing = refreshOnce().finally(() => (refreshing = null));
  return refreshing;
}

async function refreshOnce() {
  const session = getSession();
  if (!session || !session.refresh) return false;
  try {
    const response = await fetch(apiUrl("token/refresh/"), {
      method: "POST",
      credentials: "include",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ refresh: session.refresh }),
    });
    if (response.status !== 200) return false;
    setSession({ ...session, ...(await response.json()) });
    return true;
  } catch {
    return false;
  }
}

/** Seconds until a JWT access token expires (Infinity when it cannot be read). */
export function secondsLeft(access, now = Date.now()) {
  try {
    const payload = JSON.parse(
      atob(access.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")),
    );
    return typeof payload.exp === "number"
      ? payload.exp - now / 1000
      : Infinity;
  } catch {
    return Infinity;
  }
}

/** Seconds: an access token that runs out sooner is renewed before it is sent. */
export const REFRESH_MARGIN = 60;

/** A reply that says the access token is no longer good (§4, §8). */
export function tokenRefused(status, data) {
  return (
    status === 401 &&
    Boolean(data && data.code === "token_not_valid" && data.messages)
  );
}

function endSession() {
  clearSession();
  navigate("/auth/login");
}

/**
 * The one token policy (§4, §8) for everything the console sends with the session:
 * JSON requests, multipart uploads and resumable uploads alike. Make one per
 * request (or per upload) and ask it
 * - `authorization()` before each send: the Authorization value, the access token
 *   renewed first when it runs out within REFRESH_MARGIN (null: not signed in);
 * - `retry(status, data)` after each reply: true when the reply refused the token
 *   and a renewal was had, so the request goes once more. One renewal a request:
 *   when it cannot be had, or the renewed token is refused too, the session ends
 *   (cleared, and the console goes to /auth/login). Any other reply makes the
 *   renewal available again (a long upload sends many requests).
 */
export function sessionPolicy() {
  let renewed = false;
  return {
    async authorization() {
      const session = getSession();
      if (!session || !session.access) return null;
      if (!renewed && secondsLeft(session.access) < REFRESH_MARGIN) {
        renewed = true; // a failed renewal is left to the refusal that follows
        await refreshSession();
      }
      return `Bearer ${getSession().access}`;
    },
    async retry(status, data) {
      if (!tokenRefused(status, data)) {
        renewed = false;
        return false;
      }
      if (!renewed) {
        renewed = true;
        if (await refreshSession()) return true;
      }
      endSession();
      return false;
    },
  };
}

/**
 * Send by `transport(authorization)` under the session policy (none for
 * `anonymous` calls) and return its last reply, {ok, status, data, value}.
 */
async function withSession(transport, anonymous) {
  const policy = anonymous ? null : sessionPolicy();
  for (;;) {
    const reply = await transport(policy ? await policy.authorization() : null);
    if (reply.ok || !policy || !(await policy.retry(reply.status, reply.data)))
      return reply;
  }
}

async function checkInitialized() {
  try {
    const response = await fetch(apiUrl("initialized/"), {
      credentials: "include",
    });
    if (response.status !== 200) return false;
    return Boolean((await response.json()).initialized);
  } catch {
    return false;
  }
}

/**
 * One call, with every rule of the error catalogue. `anonymous` calls (the public
 * share pages) send no token and skip the refresh and redirect rules: a visitor
 * has no session to refresh and no organisation to be sent to the billing page of.
 */
export async function request(
  method,
  path,
  { params, body, headers, blob, anonymous } = {},
) {
  const reply = await withSession(async (authorization) => {
    const init = {
      method,
      credentials: "include",
      headers: { ...(headers || {}) },
    };
    if (body instanceof FormData) {
      init.body = body;
    } else if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    if (authorization) init.headers.Authorization = authorization;
    let response;
    try {
      response = await fetch(apiUrl(path, params), init);
    } catch (error) {
      // no reply at all (the appliance is down, the network is gone): say so, not the
      // browser's "Failed to fetch"
      throw new ApiError(0, { detail: UNREACHABLE }, { cause: error });
    }
    if (!response.ok)
      return { status: response.status, data: await readBody(response) };
    if (blob) return { ok: true, value: await response.blob() };
    return {
      ok: true,
      value: response.status === 204 ? null : await readBody(response),
    };
  }, anonymous);
  if (reply.ok) return reply.value;
  const { status, data } = reply;
  if (!anonymous && !tokenRefused(status, data))
    await redirectAfter(method, status, data);
  throw new ApiError(status, data);
}

/** The catalogue's redirects after a failed GET off the login page (§8). */
async function redirectAfter(method, status, data) {
  if (method !== "GET" || onLoginPage()) return;
  if (status === 500 && !(await checkInitialized())) {
    navigate("/auth/login");
  } else if (
    status === 403 &&
    data &&
    data.detail === "Organisation payment missing"
  ) {
    navigate("/auth/billing");
  } else if (
    status === 403 &&
    data &&
    data.detail === "Organisation is deleted"
  ) {
    navigate("/auth/login");
  }
}

/** One multipart request by XMLHttpRequest (fetch reports no upload progress). */
function sendForm(
  method,
  url,
  formData,
  { authorization, headers, onProgress, signal },
) {
  return new Promise((resolve, reject) => {
    if (signal && signal.aborted)
      return reject(new ApiError(0, { detail: "The upload was cancelled." }));
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    xhr.withCredentials = true;
    if (authorization) xhr.setRequestHeader("Authorization", authorization);
    for (const [name, value] of Object.entries(headers || {}))
      xhr.setRequestHeader(name, value);
    if (signal) signal.addEventListener("abort", () => xhr.abort());
    xhr.onabort = () =>
      reject(new ApiError(0, { detail: "The upload was cancelled." }));
    xhr.upload.onprogress = (event) => {
      if (onProgress && event.lengthComputable)
        onProgress(event.loaded / event.total);
    };
    xhr.onload = () => {
      let data;
      try {
        data = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        data = { detail: xhr.responseText };
      }
      const ok = xhr.status >= 200 && xhr.status < 300;
      resolve({ ok, status: xhr.status, data, value: data });
    };
    xhr.onerror = () =>
      reject(new ApiError(0, { detail: "The upload was interrupted." }));
    xhr.send(formData);
  });
}

export const api = {
  get: (path, params) => request("GET", path, { params }),
  download: (path, params) => request("GET", path, { params, blob: true }),
  post: (path, body, params) => request("POST", path, { body, params }),
  put: (path, body) => request("PUT", path, { body }),
  patch: (path, body) => request("PATCH", path, { body }),
  delete: (path, params) => request("DELETE", path, { params }),
  /** Multipart upload with progress, under the same session policy as every call. */
  async upload(
    path,
    formData,
    { method = "POST", params, onProgress, headers, anonymous, signal } = {},
  ) {
    const url = apiUrl(path, params);
    const reply = await withSession(
      (authorization) =>
        sendForm(method, url, formData, {
          authorization,
          headers,
          onProgress,
          signal,
        }),
      anonymous,
    );
    if (reply.ok) return reply.value;
    throw new ApiError(reply.status, reply.data);
  },
};

/** SWR's fetcher: keys are [path, params]. */
export const fetcher = (key) =>
  Array.isArray(key) ? api.get(key[0], key[1]) : api.get(key);
