import { useState } from "react";
import { PageHeader } from "../../../components/lists.jsx";
import { errorText, useNotify } from "../../../components/notifications.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { exportLogs } from "../api/exportLogs.js";
import { useLogs } from "../api/getLogs.js";
import {
  LogFilters,
  activeFilters,
  useLogFilters,
} from "../../../components/logs/LogFilters.jsx";
import { LogTable } from "../../../components/logs/LogTable.jsx";
import { saveBlob } from "../../../lib/saveBlob.js";

export function LogList() {
  usePageTitle("Logs");
  const notify = useNotify();
  const { filters, page, setFilters, setPage } = useLogFilters();
  const active = activeFilters(filters);
  const { data, error } = useLogs({ ...active, page });
  const [exporting, setExporting] = useState(false);

  async function download() {
    setExporting(true);
    const done = notify("Exporting the log…", { type: "ongoing", timeout: 0 });
    try {
      saveBlob(await exportLogs(active), "audit-log.csv");
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    } finally {
      done();
      setExporting(false);
    }
  }
  return (
    <>
      <PageHeader title="Logs">
        <button onClick={download} disabled={exporting}>
          Export CSV
        </button>
      </PageHeader>
      <LogFilters filters={filters} onChange={setFilters} />
      <LogTable
        data={data}
        error={error}
        page={page}
        onPage={setPage}
        filters={filters}
        onFilter={setFilters}
      />
    </>
  );
}
