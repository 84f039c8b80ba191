import { createRoot } from "react-dom/client";
import { setupHttpClient } from "./lib/api.js";
import { setupErrorReporting } from "./lib/errors.js";
import { createAppRouter } from "./app/router.jsx";
import { App } from "./app/App.jsx";
import { startUp } from "./app/startup.js";

const router = createAppRouter();

startUp(
  [
    () => setupHttpClient({ navigate: (path) => router.navigate(path) }),
    () => setupErrorReporting(),
  ],
  () =>
    createRoot(document.getElementById("root")).render(<App router={router} />),
);
