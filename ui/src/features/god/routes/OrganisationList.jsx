import { useState } from "react";
import { ResourceListPage } from "../../../components/lists.jsx";
import { RowActions } from "../../../components/RowActions.jsx";
import {
  errorText,
  useAttemptNotify,
} from "../../../components/notifications.jsx";
import { useOrganisations } from "../api/getOrganisations.js";
import { useMeasureStorage } from "../api/measureStorage.js";
import { ChangeStatusDialog } from "../components/ChangeStatusDialog.jsx";
import { CreateOrganisationDialog } from "../components/CreateOrganisationDialog.jsx";
import { FoldersSection } from "../components/FoldersSection.jsx";
import { MailSection } from "../components/MailSection.jsx";
import { organisationStatus } from "../components/statuses.js";
import { storageMeasured, storageText } from "../components/storage.js";

/** /admin/god: the operator's list of every organisation. */
export function OrganisationList() {
  const [changing, setChanging] = useState(null);
  const [creating, setCreating] = useState(false);
  const [measuring, setMeasuring] = useState(null);
  const notify = useAttemptNotify();
  const measure = useMeasureStorage();
  async function measureNow(organisation) {
    setMeasuring(organisation.id);
    try {
      const measured = await measure(organisation.id);
      notify(`${organisation.name}: ${storageText(measured)}`, {
        type: "positive",
      });
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    } finally {
      setMeasuring(null);
    }
  }
  const columns = [
    ["Name", (o) => o.name],
    ["Subdomain", (o) => o.subdomain],
    [
      "Status",
      (o) => (
        <span className={`badge ${organisationStatus(o).tone}`}>
          {organisationStatus(o).text}
        </span>
      ),
    ],
    ["Users", (o) => o.users],
    [
      "Storage",
      (o) => (
        <span title={storageMeasured(o)} data-testid={`storage-${o.id}`}>
          {storageText(o)}
        </span>
      ),
    ],
    ["Trial", (o) => organisationStatus(o).trial],
    [
      "Actions",
      (o) => (
        <RowActions
          name={o.name}
          actions={[
            { label: "Change status", onSelect: () => setChanging(o) },
            { label: "Logs", to: `/admin/god/${o.id}/logs` },
            {
              key: "measure",
              label: measuring === o.id ? "Measuring…" : "Measure storage",
              ariaLabel: `Measure storage of ${o.name}`,
              disabled: measuring === o.id,
              onSelect: () => measureNow(o),
            },
          ]}
        />
      ),
      { actions: true },
    ],
  ];
  return (
    <>
      <ResourceListPage
        title="Organisations"
        actions={<button onClick={() => setCreating(true)}>Create</button>}
        useList={useOrganisations}
        columns={columns}
      />
      <div className="stack sections">
        <FoldersSection />
        <MailSection />
      </div>
      {changing ? (
        <ChangeStatusDialog
          organisation={changing}
          onClose={() => setChanging(null)}
        />
      ) : null}
      {creating ? (
        <CreateOrganisationDialog onClose={() => setCreating(false)} />
      ) : null}
    </>
  );
}
