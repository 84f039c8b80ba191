import { createRoot } from "react-dom/client";
import { setupHttpClient } from "./lib/api.js";
import { createAppRouter, App } from "./app/App.jsx";

// Start-up (console-spec §4): the HTTP client, then error reporting, then mount.
function setupErrorReporting() {
  window.addEventListener("error", (event) => console.error("console error:", event.error || event.message));
  window.addEventListener("unhandledrejection", (event) => console.error("console error:", event.reason));
}

async function start() {
  const router = createAppRouter();
  setupHttpClient({ navigate: (path) => router.navigate(path) });
  setupErrorReporting();
  createRoot(document.getElementById("root")).render(<App router={router} />);
}

start().catch((error) => {
  if (error && error.url) window.location.assign(error.url);
  else console.error("start-up failed:", error);
});
