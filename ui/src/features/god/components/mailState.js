import { formatTime } from "../../../lib/format.js";

/**
 * The state of outbound mail in words: {tone, label, summary, rows}. tone:
 * "positive" when the last attempt went through, "negative" when it failed,
 * "warning" when nothing was sent yet (the default mail server is localhost:25,
 * where often nothing listens). rows: [term, description] for a definition list.
 */
export function mailState(state) {
  const rows = [
    [
      "Mail server",
      `${state.host}:${state.port}${state.starttls ? " with STARTTLS" : ""}${state.authenticated ? ", signed in" : ""}`,
    ],
    ["Sender", state.sender],
    [
      "Last delivered",
      state.last_success_at
        ? `${formatTime(state.last_success_at)} to ${state.last_success_to}`
        : "Nothing since the appliance started",
    ],
  ];
  if (state.last_error_at)
    rows.push([
      "Last error",
      `${formatTime(state.last_error_at)} to ${state.last_error_to}: ${state.last_error}`,
    ]);
  if (state.pending)
    rows.push([
      "Waiting",
      `${state.pending} message${state.pending === 1 ? "" : "s"} to be retried`,
    ]);
  const failedLast =
    state.last_error_at &&
    (!state.last_success_at || state.last_error_at > state.last_success_at);
  if (failedLast)
    return {
      tone: "negative",
      label: "Failing",
      summary:
        "The last mail could not be sent: invitations and password resets do not arrive. Check the mail server below, then send a test mail.",
      rows,
    };
  if (state.last_success_at)
    return {
      tone: "positive",
      label: "Working",
      summary: "The mail server takes the appliance's mail.",
      rows,
    };
  return {
    tone: "warning",
    label: "Not tried yet",
    summary: "No mail was sent since the appliance started: send a test mail.",
    rows,
  };
}
