export const STATUSES = [
  ["trial", "Trial"],
  ["active", "Active"],
  ["payment_missing", "Payment missing"],
  ["deleted", "Deleted"],
];
export const statusText = (status) =>
  (STATUSES.find(([value]) => value === status) || [status, status])[1];
