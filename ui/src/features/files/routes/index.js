// The file viewer, loaded on demand (with the upload client).
export { FileViewer } from "./FileViewer.jsx";
