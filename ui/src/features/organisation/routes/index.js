// The organisation's screens, loaded on demand.
export { OrganisationSettings } from "./OrganisationSettings.jsx";
export { UserTerms } from "./UserTerms.jsx";
