/**
 * What to tell the admin after a mailbox was saved: a warning that stays until it is
 * dismissed when the server saved it with one (its host does not resolve yet), else a
 * short confirmation. `verb`: "Created" or "Saved".
 */
export function savedNote(verb, mailbox) {
  if (mailbox.warning) {
    return {
      message: `${verb} ${mailbox.name}. ${mailbox.warning}`,
      options: { type: "warning", timeout: 0 },
    };
  }
  return { message: `${verb} ${mailbox.name}`, options: { type: "positive" } };
}
