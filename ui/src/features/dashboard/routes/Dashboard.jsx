import { lazy, Suspense } from "react";
import { usePageTitle } from "../../../components/PageMeta.js";
import { errorText } from "../../../components/notifications.jsx";
import { useOverview } from "../api/getOverview.js";
import {
  LatestActivity,
  TopUsers,
  TransfersTable,
} from "../components/Activity.jsx";
import { useDebouncedWidth } from "../components/useDebouncedWidth.js";

const TransfersChart = lazy(() => import("../components/TransfersChart.jsx"));

function Counter({ label, value }) {
  return (
    <div className="card counter">
      <span>{label}</span>
      <strong>{value}</strong>
    </div>
  );
}

export function Dashboard() {
  usePageTitle("Dashboard");
  const { data, error } = useOverview();
  const [box, width] = useDebouncedWidth();
  if (error)
    return (
      <p className="error">
        The dashboard could not be loaded: {errorText(error)}
      </p>
    );
  if (!data) return <p>Loading…</p>;
  return (
    <>
      <h1>Overview</h1>
      <section className="counters" aria-label="Overview">
        <Counter label="Total users" value={data.users} />
        <Counter
          label="Active users (last 30 days)"
          value={data.active_users}
        />
        <Counter label="Actions" value={data.log_count} />
        <Counter
          label="Files transferred (last 30 days)"
          value={data.file_transfers}
        />
      </section>
      <section className="card">
        <h2>File transfers</h2>
        <div ref={box} className="chart-box" aria-hidden="true">
          {width > 0 ? (
            <Suspense fallback={<p>Loading the chart…</p>}>
              <TransfersChart series={data.series} width={width} />
            </Suspense>
          ) : null}
        </div>
        <TransfersTable series={data.series} />
      </section>
      <div className="grid-2">
        <LatestActivity logs={data.logs} />
        <TopUsers users={data.top_users} />
      </div>
    </>
  );
}
