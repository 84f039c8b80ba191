import * as tus from "tus-js-client";
import {
  ApiError,
  apiUrl,
  getSession,
  refreshAccess,
} from "../../../lib/api.js";

// Resumable uploads by tus 1.0.0 at files/tus/ (tus-js-client): a dropped connection
// or a renewed access token continues from the offset the server recorded, and an
// upload interrupted by a reload resumes from the same file chosen again.
export const TUS_ENDPOINT = "files/tus/";
export const CHUNK_SIZE = 16 * 1024 * 1024; // bytes per PATCH: each well inside a token's lifetime
export const RETRY_DELAYS = [0, 1000, 3000, 5000, 10000, 20000, 30000];
const REFRESH_MARGIN = 60; // seconds: renew an access token that runs out sooner than this

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

/** Which failures to try again: the network, the server, a conflict, or a token to renew. */
export function retryable(status) {
  return [0, 401, 409, 423, 500, 502, 503, 504].includes(status); // not 507: the quota is full
}

/** A tus error as the console's ApiError (status and the server's JSON detail). */
export function asApiError(error) {
  const response = error && error.originalResponse;
  if (!response)
    return new ApiError(0, {
      detail: "The upload was interrupted: the network is unreachable.",
    });
  let data;
  try {
    data = JSON.parse(response.getBody() || "{}");
  } catch {
    data = { detail: response.getBody() };
  }
  // a HEAD's reply has no body: the server puts its detail in Upload-Error (say, a
  // remote source that could not take a complete upload yet)
  const header = response.getHeader && response.getHeader("Upload-Error");
  if (!data.detail && header) {
    try {
      data = { ...data, detail: decodeURIComponent(header) };
    } catch {
      data = { ...data, detail: header };
    }
  }
  return new ApiError(response.getStatus(), data);
}

/**
 * Upload one file into `folder` under `relativePath` (which may hold sub-folders,
 * created as needed). Resolves when the last byte is stored.
 */
export function uploadFile(
  file,
  folder,
  relativePath,
  { onProgress, signal } = {},
) {
  const target = relativePath || file.name;
  return new Promise((resolve, reject) => {
    let renew = false;
    const upload = new tus.Upload(file, {
      endpoint: apiUrl(TUS_ENDPOINT),
      chunkSize: CHUNK_SIZE,
      retryDelays: RETRY_DELAYS,
      metadata: {
        filename: file.name,
        relativePath: target,
        path: folder,
        filetype: file.type || "",
      },
      storeFingerprintForResuming: true,
      removeFingerprintOnSuccess: true,
      // the same file into another folder, or by another user, is another upload
      fingerprint: async (f) => {
        const user = (getSession() || {}).username || "";
        return ["console", user, folder, target, f.size, f.lastModified].join(
          "|",
        );
      },
      onBeforeRequest: async (req) => {
        const session = getSession();
        if (
          renew ||
          (session &&
            session.access &&
            secondsLeft(session.access) < REFRESH_MARGIN)
        ) {
          renew = false;
          if (!(await refreshAccess()))
            throw new Error("The session has ended: sign in again.");
        }
        const current = getSession();
        if (current && current.access)
          req.setHeader("Authorization", `Bearer ${current.access}`);
      },
      onShouldRetry: (error) => {
        const status = error.originalResponse
          ? error.originalResponse.getStatus()
          : 0;
        if (status === 401) renew = true; // token_not_valid: renew it, then go on from the offset
        return retryable(status);
      },
      onProgress: (sent, total) =>
        onProgress && onProgress(total ? sent / total : 1),
      onSuccess: () =>
        resolve({
          path: `${folder.replace(/\/$/, "")}/${target}`,
          size: file.size,
        }),
      onError: (error) => reject(asApiError(error)),
    });
    if (signal) {
      signal.addEventListener("abort", () => {
        upload.abort(true).catch(() => {});
        reject(new ApiError(0, { detail: "The upload was cancelled." }));
      });
    }
    upload
      .findPreviousUploads()
      .then((previous) => {
        if (previous.length) upload.resumeFromPreviousUpload(previous[0]);
        upload.start();
      })
      .catch(() => upload.start());
  });
}
