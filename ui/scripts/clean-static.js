// Empty the package's static folder before a build, so it holds one build only.
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";

const folder = new URL("../../appliance/static/", import.meta.url).pathname;
for (const name of readdirSync(folder)) {
  if (name !== ".gitkeep")
    rmSync(join(folder, name), { recursive: true, force: true });
}
