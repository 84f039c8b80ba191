/** A name a user typed for a file or folder: null when fine, else why not. */
export function nameProblem(name) {
  if (!name || !name.trim()) return "Enter a name.";
  if (name.includes("/")) return "A name cannot contain /.";
  if (name === "." || name === "..") return "Choose another name.";
  return null;
}

/** Entries sorted by `key` (name, size or modified), folders first. */
export function sortEntries(entries, { key, up }) {
  const sorted = [...entries].sort((a, b) => {
    if ((a.type === "dir") !== (b.type === "dir"))
      return a.type === "dir" ? -1 : 1;
    let order;
    if (key === "name")
      order = a.name.localeCompare(b.name, undefined, {
        numeric: true,
        sensitivity: "base",
      });
    else if (key === "size") order = (a.size || 0) - (b.size || 0);
    else order = String(a.modified).localeCompare(String(b.modified));
    return up ? order : -order;
  });
  return sorted;
}
