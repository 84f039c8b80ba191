import { lazy, Suspense, useEffect, useState } from "react";
import useSWR from "swr";
import { Dialog } from "../../components/dialog.jsx";
import { ConnectDialog } from "../connect/ConnectDialog.jsx";

const TransfersChart = lazy(() => import("./TransfersChart.jsx"));

/** The width of the chart's box, re-read on resize after a 150 ms pause. */
export function useDebouncedWidth(delay = 150) {
  const [width, setWidth] = useState(() => Math.max(320, window.innerWidth - 320));
  useEffect(() => {
    let timer;
    const onResize = () => {
      clearTimeout(timer);
      timer = setTimeout(() => setWidth(Math.max(320, window.innerWidth - 320)), delay);
    };
    window.addEventListener("resize", onResize);
    return () => {
      clearTimeout(timer);
      window.removeEventListener("resize", onResize);
    };
  }, [delay]);
  return width;
}

export default function Dashboard() {
  const { data, error } = useSWR("dashboard/overview/");
  const { data: information } = useSWR("dashboard/information/");
  const width = useDebouncedWidth();
  const [welcome, setWelcome] = useState(new URLSearchParams(window.location.search).has("welcome"));
  useEffect(() => {
    document.title = "Dashboard · File transfer portal";
  }, []);
  if (error) return <p className="error">The dashboard could not be loaded: {error.message}</p>;
  if (!data) return <p>Loading…</p>;
  return (
    <>
      <h1>Overview</h1>
      <section className="counters" aria-label="Overview">
        <div className="card counter"><span>Total users</span><strong>{data.users}</strong></div>
        <div className="card counter"><span>Active users (last 30 days)</span><strong>{data.active_users}</strong></div>
        <div className="card counter"><span>Actions</span><strong>{data.log_count}</strong></div>
        <div className="card counter"><span>Files transferred (last 30 days)</span><strong>{data.file_transfers}</strong></div>
      </section>
      <section className="card">
        <h2>File transfers</h2>
        <Suspense fallback={<p>Loading the chart…</p>}>
          <TransfersChart series={data.series} width={width} />
        </Suspense>
      </section>
      <div className="grid-2">
        <section className="card">
          <h2>Latest activity</h2>
          {data.logs.length === 0 ? (
            <p>No activity yet</p>
          ) : (
            <ul>
              {data.logs.map((entry) => (
                <li key={entry.id}>
                  <strong>{entry.username}</strong> <time>{new Date(entry.created_at).toLocaleString()}</time>: {entry.message}
                </li>
              ))}
            </ul>
          )}
        </section>
        <section className="card">
          <h2>Top users</h2>
          {data.top_users.length === 0 ? (
            <p>No activity yet</p>
          ) : (
            <table>
              <thead><tr><th>User</th><th>Last login</th><th>Transfers (30 days)</th></tr></thead>
              <tbody>
                {data.top_users.map((user) => (
                  <tr key={user.id}>
                    <td>{user.username}</td>
                    <td>{user.last_login ? new Date(user.last_login).toLocaleString() : "never"}</td>
                    <td>{user.count}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      </div>
      {welcome ? <ConnectDialog information={information} onClose={() => setWelcome(false)} /> : null}
    </>
  );
}

export { Dialog };
