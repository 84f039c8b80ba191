import { api } from "../../../lib/api.js";

/** GET logs/export/ with the same filters: every matching row as CSV (a Blob). */
export const exportLogs = (filters) => api.download("logs/export/", filters);
