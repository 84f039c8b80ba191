// The log screen, loaded on demand.
export { LogList } from "./LogList.jsx";
