import { formatBytes, formatTime } from "../../../lib/format.js";

/** An organisation's storage as the list shows it: "1.2 GB in 340 files", or not yet measured. */
export function storageText(organisation) {
  if (
    organisation.storage_bytes === null ||
    organisation.storage_bytes === undefined
  )
    return "Not measured yet";
  const files = organisation.storage_files;
  const size = formatBytes(organisation.storage_bytes);
  return `${size} in ${files} ${files === 1 ? "file" : "files"}`;
}

/** When the figures were measured (the list reads the last measurement, made every 10 minutes). */
export const storageMeasured = (organisation) =>
  organisation.storage_measured_at
    ? `Measured ${formatTime(organisation.storage_measured_at)}`
    : "";
