// The operator's screens, loaded on demand.
export { OrganisationList } from "./OrganisationList.jsx";
export { OrganisationLogs } from "./OrganisationLogs.jsx";
