// The source screens, loaded on demand.
export { SourceCallback } from "./SourceCallback.jsx";
export { SourceCreate } from "./SourceCreate.jsx";
export { SourceDetail } from "./SourceDetail.jsx";
export { SourceList } from "./SourceList.jsx";
