// After `npm install`: drop from package-lock.json the optional platform packages
// (other operating systems' builds of swc, msgpackr-extract) that the package
// registry reachable here does not serve, so `npm ci` accepts the lockfile.
// Run it through `npm run lock`.
import { readFileSync, writeFileSync } from "node:fs";

const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const present = new Set(
  Object.keys(lock.packages)
    .filter(Boolean)
    .map((key) => key.split("node_modules/").pop()),
);
let dropped = 0;
for (const entry of Object.values(lock.packages)) {
  if (!entry.optionalDependencies) continue;
  for (const name of Object.keys(entry.optionalDependencies)) {
    if (!present.has(name)) {
      delete entry.optionalDependencies[name];
      dropped += 1;
    }
  }
  if (Object.keys(entry.optionalDependencies).length === 0)
    delete entry.optionalDependencies;
}
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(
  `package-lock.json: dropped ${dropped} optional packages the registry does not serve`,
);
