// The one HTTP client (console-spec §4, §7, §8): backend host, credentials, JSON,
// Bearer token from `authUser`, refresh-and-retry on token_not_valid, the 500 and
// 403 redirects, errors re-thrown to the caller.

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

/**
 * For clients that make their own requests (the resumable uploads): renew the
 * access token after a 401 token_not_valid, sharing the one refresh in flight; on
 * failure the session is cleared and the console goes to /auth/login (§4, §8).
 */
export async function refreshAccess() {
  if (await refreshSession()) return true;
  clearSession();
  navigate("/auth/login");
  return false;
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
  { params, body, headers, blob, retried, anonymous } = {},
) {
  const session = anonymous ? null : getSession();
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
  if (session && session.access)
    init.headers.Authorization = `Bearer ${session.access}`;
  let response;
  try {
    response = await fetch(apiUrl(path, params), init);
  } catch (error) {
    // no reply at all (the appliance is down, the network is gone): say so, not the
    // browser's "Failed to fetch"
    throw new ApiError(0, { detail: UNREACHABLE }, { cause: error });
  }
  if (response.ok) {
    if (blob) return response.blob();
    return response.status === 204 ? null : readBody(response);
  }
  const data = await readBody(response);
  if (anonymous) throw new ApiError(response.status, data);
  if (
    response.status === 401 &&
    data &&
    data.code === "token_not_valid" &&
    data.messages
  ) {
    if (!retried && (await refreshSession())) {
      return request(method, path, {
        params,
        body,
        headers,
        blob,
        retried: true,
      });
    }
    clearSession();
    navigate("/auth/login");
  } else if (method === "GET" && !onLoginPage()) {
    if (response.status === 500 && !(await checkInitialized())) {
      navigate("/auth/login");
    } else if (
      response.status === 403 &&
      data &&
      data.detail === "Organisation payment missing"
    ) {
      navigate("/auth/billing");
    } else if (
      response.status === 403 &&
      data &&
      data.detail === "Organisation is deleted"
    ) {
      navigate("/auth/login");
    }
  }
  throw new ApiError(response.status, data);
}

export const api = {
  get: (path, params) => request("GET", path, { params }),
  download: (path, params) => request("GET", path, { params, blob: true }),
  post: (path, body, params) => request("POST", path, { body, params }),
  put: (path, body) => request("PUT", path, { body }),
  patch: (path, body) => request("PATCH", path, { body }),
  delete: (path, params) => request("DELETE", path, { params }),
  /** Multipart upload with progress (XMLHttpRequest: fetch reports no upload progress). */
  upload(
    path,
    formData,
    { method = "POST", params, onProgress, headers, anonymous, signal } = {},
  ) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open(method, apiUrl(path, params));
      xhr.withCredentials = true;
      const session = anonymous ? null : getSession();
      if (session && session.access)
        xhr.setRequestHeader("Authorization", `Bearer ${session.access}`);
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
        if (xhr.status >= 200 && xhr.status < 300) resolve(data);
        else reject(new ApiError(xhr.status, data));
      };
      xhr.onerror = () =>
        reject(new ApiError(0, { detail: "The upload was interrupted." }));
      xhr.send(formData);
    });
  },
};

/** SWR's fetcher: keys are [path, params]. */
export const fetcher = (key) =>
  Array.isArray(key) ? api.get(key[0], key[1]) : api.get(key);
