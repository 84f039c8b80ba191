// The connection documentation, loaded on demand.
export { Documentation } from "./Documentation.jsx";
