// The access value of an unlocked password-protected link, kept for the tab's visit.
const key = (token) => `shareAccess:${token}`;

export function storedAccess(token) {
  try {
    const saved = JSON.parse(sessionStorage.getItem(key(token)));
    if (
      saved &&
      saved.expires_at &&
      new Date(saved.expires_at).getTime() > Date.now()
    )
      return saved.access;
  } catch {
    // nothing usable stored
  }
  return null;
}

export function storeAccess(token, value) {
  try {
    sessionStorage.setItem(key(token), JSON.stringify(value));
  } catch {
    // storage unavailable: the access holds for this page only
  }
}

export function forgetAccess(token) {
  try {
    sessionStorage.removeItem(key(token));
  } catch {
    // storage unavailable
  }
}
