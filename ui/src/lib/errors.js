// Error reporting (start-up step two): uncaught errors and rejections are logged
// with a marker, so a support person finds them in the browser console.
let installed = false;

export function setupErrorReporting(log = console.error) {
  if (installed) return;
  installed = true;
  window.addEventListener("error", (event) =>
    log("console error:", event.error || event.message),
  );
  window.addEventListener("unhandledrejection", (event) =>
    log("console error:", event.reason),
  );
}
