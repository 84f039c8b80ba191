// The API token screens, loaded on demand.
export { TokenCreate } from "./TokenCreate.jsx";
export { TokenDetail } from "./TokenDetail.jsx";
export { TokenList } from "./TokenList.jsx";
