import { lazy, Suspense } from "react";
import { useSearchParams } from "react-router";
import { usePageTitle } from "../../../components/PageMeta.js";
import { errorText } from "../../../components/notifications.jsx";
import { DEFAULT_PERIOD, PERIODS, useOverview } from "../api/getOverview.js";
import {
  LatestActivity,
  TopUsers,
  TransfersTable,
  noTransfers,
} from "../components/Activity.jsx";
import { useDebouncedWidth } from "../components/useDebouncedWidth.js";

const TransfersChart = lazy(() => import("../components/TransfersChart.jsx"));

// what an empty chart says, by period: a month chart covers the appliance's first year
const NOTHING = {
  day: "No transfers in the last 30 days",
  week: "No transfers in the last 12 weeks",
  month: "No transfers yet",
};

/** Bars per day, week or month: a young appliance's transfers are not one bar at the edge. */
function PeriodChoice({ period, onChange }) {
  return (
    <div className="period-choice" role="group" aria-label="Bars per">
      {PERIODS.map(([value, label]) => (
        <button
          key={value}
          type="button"
          className={value === period ? "small" : "secondary small"}
          aria-pressed={value === period}
          onClick={() => onChange(value)}
        >
          {label}
        </button>
      ))}
    </div>
  );
}

/** The chart's period, kept in the address (?period=) like the log's filters. */
function usePeriod() {
  const [params, setParams] = useSearchParams();
  const asked = params.get("period");
  const period = PERIODS.some(([value]) => value === asked)
    ? asked
    : DEFAULT_PERIOD;
  const choose = (value) => {
    const next = new URLSearchParams(params);
    if (value === DEFAULT_PERIOD) next.delete("period");
    else next.set("period", value);
    setParams(next, { replace: true });
  };
  return [period, choose];
}

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
  const [period, setPeriod] = usePeriod();
  const { data, error } = useOverview(period);
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
        <div className="card-header">
          <h2>File transfers</h2>
          <PeriodChoice period={period} onChange={setPeriod} />
        </div>
        {noTransfers(data.series) ? (
          <p className="empty-chart" data-testid="no-transfers">
            {NOTHING[period]}
          </p>
        ) : (
          <>
            <div ref={box} className="chart-box" aria-hidden="true">
              {width > 0 ? (
                <Suspense fallback={<p>Loading the chart…</p>}>
                  <TransfersChart series={data.series} width={width} />
                </Suspense>
              ) : null}
            </div>
            <TransfersTable
              series={data.series}
              bar={PERIODS.find(([value]) => value === period)[2]}
            />
          </>
        )}
      </section>
      <div className="grid-2">
        <LatestActivity logs={data.logs} />
        <TopUsers users={data.top_users} />
      </div>
    </>
  );
}
