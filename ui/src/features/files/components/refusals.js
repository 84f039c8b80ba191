const WHAT = {
  download: "download files",
  upload: "upload files",
  mkdir: "create folders",
  rename: "rename files or folders",
  delete: "delete files or folders",
};

/** For each action of the file viewer, why the signed-in user may not (a tooltip for its
 * disabled button), or null. `info` is dashboard/information/: the profile's permissions
 * and whether its source is read-only. Until it arrives nothing is refused: the server
 * checks every call anyway. */
export function refusals(info) {
  const known = info && Array.isArray(info.permissions);
  const why = {};
  for (const [action, what] of Object.entries(WHAT)) {
    if (!known) why[action] = null;
    else if (!info.permissions.includes(action))
      why[action] = `You may not ${what}. Ask your administrator for access.`;
    else if (action !== "download" && info.read_only)
      why[action] = "The source is read-only: nothing in it can be changed.";
    else why[action] = null;
  }
  // a link shares for download, or takes uploads as a drop box
  why.share =
    why.download && why.upload
      ? "You may neither download nor upload files, so you cannot share them by link."
      : null;
  return why;
}
