// The profile screens, loaded on demand.
export { ProfileCreate } from "./ProfileCreate.jsx";
export { ProfileDetail } from "./ProfileDetail.jsx";
export { ProfileList } from "./ProfileList.jsx";
