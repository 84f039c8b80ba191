import * as tus from "tus-js-client";
import {
  ApiError,
  apiUrl,
  getSession,
  sessionPolicy,
} from "../../../lib/api.js";

// Resumable uploads by tus 1.0.0 at files/tus/ (tus-js-client): a dropped connection
// or a renewed access token continues from the offset the server recorded, and an
// upload interrupted by a reload resumes from the same file chosen again.
export const TUS_ENDPOINT = "files/tus/";
export const CHUNK_SIZE = 16 * 1024 * 1024; // bytes per PATCH: each well inside a token's lifetime
export const RETRY_DELAYS = [0, 1000, 3000, 5000, 10000, 20000, 30000];
// what a bodiless 401 from the tus endpoint stands for
const BODILESS_REFUSAL = { code: "token_not_valid", messages: [] };

/** Which failures to try again: the network, the server, a conflict, or a token to renew. */
export function retryable(status) {
  return [0, 401, 409, 423, 500, 502, 503, 504].includes(status); // not 507: the quota is full
}

/** A tus reply's JSON body (a HEAD's reply has none). */
function replyData(response) {
  const body = response.getBody();
  if (!body) return null;
  try {
    return JSON.parse(body);
  } catch {
    return { detail: body };
  }
}

/** A tus error as the console's ApiError (status and the server's JSON detail). */
export function asApiError(error) {
  const response = error && error.originalResponse;
  if (!response)
    return new ApiError(0, {
      detail: "The upload was interrupted: the network is unreachable.",
    });
  let data = replyData(response) || {};
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
    // the console's one token policy, asked before and after each request tus makes
    const policy = sessionPolicy();
    let renewed = false; // the last reply refused the token and it was renewed: go on
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
        const authorization = await policy.authorization();
        if (authorization) req.setHeader("Authorization", authorization);
      },
      onAfterResponse: async (req, res) => {
        const status = res.getStatus();
        // a HEAD's 401 has no body to say why: from this endpoint it is the token
        const data =
          replyData(res) || (status === 401 ? BODILESS_REFUSAL : null);
        renewed = await policy.retry(status, data);
      },
      // after a renewal tus goes on from the offset the server recorded
      onShouldRetry: (error) => {
        const status = error.originalResponse
          ? error.originalResponse.getStatus()
          : 0;
        return status === 401 ? renewed : retryable(status);
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
