// The mailbox screens, loaded on demand.
export { MailboxCreate } from "./MailboxCreate.jsx";
export { MailboxDetail } from "./MailboxDetail.jsx";
export { MailboxList } from "./MailboxList.jsx";
export { MailboxRuns } from "./MailboxRuns.jsx";
