// Paths inside a source or a shared folder, as the file lists show them.

/** `folder` joined with `name` ("/" + "a" is "/a"). */
export function joinPath(folder, name) {
  return `${folder.replace(/\/+$/, "")}/${name.replace(/^\/+/, "")}`;
}

/** The breadcrumbs of a path: [["Home", "/"], ["a", "/a"], ["b", "/a/b"]]. */
export function crumbs(path, root = "Home") {
  const parts = path.split("/").filter(Boolean);
  return [
    [root, "/"],
    ...parts.map((part, i) => [part, `/${parts.slice(0, i + 1).join("/")}`]),
  ];
}
