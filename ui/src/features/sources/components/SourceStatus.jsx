/** A source's status as a coloured badge, with the last error as its title. */
export function SourceStatus({ source }) {
  const status = source.status || "unknown";
  const kind =
    status === "ok" ? "positive" : status === "error" ? "negative" : "neutral";
  return (
    <span className={`badge ${kind}`} title={source.last_error || ""}>
      {status}
    </span>
  );
}
