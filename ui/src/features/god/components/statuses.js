export const STATUSES = [
  ["trial", "Trial"],
  ["active", "Active"],
  ["payment_missing", "Payment missing"],
  ["deleted", "Deleted"],
];
export const statusText = (status) =>
  (STATUSES.find(([value]) => value === status) || [status, status])[1];

/** A server time as a date in the reader's locale ("3 Jan 2030"). */
function day(iso) {
  const moment = new Date(iso);
  return Number.isNaN(moment.getTime())
    ? String(iso)
    : moment.toLocaleDateString([], { dateStyle: "medium" });
}

/**
 * An organisation's status as the operator's list shows it: {text, tone} of its
 * badge (tone: the badge's class) and what its trial column says. A trial that has
 * ended is expired, with its date, whether or not the housekeeping job has turned
 * it to payment missing yet: its members cannot sign in either way.
 */
export function organisationStatus(o) {
  if (o.trial_expired) {
    return {
      text: "Trial expired",
      tone: "status-payment_missing",
      trial: `Ended ${day(o.trial_ends_at)}`,
    };
  }
  const days = o.days_left_on_trial;
  return {
    text: statusText(o.status),
    tone: `status-${o.status}`,
    trial:
      o.on_trial && o.trial_ends_at
        ? `${days} day${days === 1 ? "" : "s"} left (ends ${day(o.trial_ends_at)})`
        : "",
  };
}

/**
 * The notification after the operator changed an organisation: its status as the
 * list and its members now see it. A trial whose end is past has ended, whatever the
 * status still says: its members meet "Payment missing", not a trial.
 */
export function statusChangeText(o) {
  if (o.trial_expired)
    return `${o.name}'s trial ended ${day(o.trial_ends_at)}: payment missing`;
  return `${o.name} is now ${statusText(o.status).toLowerCase()}`;
}
