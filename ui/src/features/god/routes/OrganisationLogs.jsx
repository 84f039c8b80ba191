import { useParams } from "react-router";
import {
  LogFilters,
  activeFilters,
  useLogFilters,
} from "../../../components/logs/LogFilters.jsx";
import { LogTable } from "../../../components/logs/LogTable.jsx";
import { PageHeader } from "../../../components/lists.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { useOrganisation } from "../api/getOrganisation.js";
import { useOrganisationLogs } from "../api/getOrganisationLogs.js";

/** /admin/god/{pid}/logs: one organisation's log, for the operator. */
export function OrganisationLogs() {
  const { pid } = useParams();
  const { data: organisation } = useOrganisation(pid);
  usePageTitle(
    organisation ? `Logs of ${organisation.name}` : "Organisation logs",
  );
  const { filters, page, setFilters, setPage } = useLogFilters();
  const active = activeFilters(filters);
  const { data, error } = useOrganisationLogs(pid, { ...active, page });
  return (
    <>
      <PageHeader
        title={organisation ? `Logs of ${organisation.name}` : "Logs"}
        back={["/admin/god", "Organisations"]}
      />
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
