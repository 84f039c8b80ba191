/** A token's state in words: revoked, expired or active. */
export function tokenState(token, now = Date.now()) {
  if (token.revoked) return "revoked";
  if (token.expires_at && new Date(token.expires_at).getTime() <= now)
    return "expired";
  return "active";
}

export const SCOPES = [
  [
    "files",
    "Files: list, upload and download the files of the admin who made it",
  ],
  ["admin", "Administration: everything an admin can do"],
];
