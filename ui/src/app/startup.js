// Start-up (console-spec §4): the start-up steps run in order, then the app mounts.
// A failing step is logged and nothing mounts; an error carrying a URL redirects there.

export async function startUp(
  steps,
  mount,
  { redirect = (url) => window.location.assign(url), log = console.error } = {},
) {
  try {
    for (const step of steps) await step();
  } catch (error) {
    if (error && error.url) redirect(error.url);
    else log("start-up failed:", error);
    return false;
  }
  mount();
  return true;
}
