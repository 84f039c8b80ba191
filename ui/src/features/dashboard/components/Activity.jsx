import { formatTime } from "../../../lib/format.js";

export function LatestActivity({ logs }) {
  return (
    <section className="card">
      <h2>Latest activity</h2>
      {logs.length === 0 ? (
        <p>No activity yet</p>
      ) : (
        <ul className="timeline">
          {logs.map((entry) => (
            <li key={entry.id}>
              <strong>{entry.username}</strong>{" "}
              <time dateTime={entry.created_at}>
                {formatTime(entry.created_at)}
              </time>
              <div>{entry.message}</div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** The chart's numbers as a table for screen readers (the chart itself is a picture);
 * `bar` names what each bar counts ("Day", "Week from", "Month"). */
export function TransfersTable({ series, bar = "Month" }) {
  const bars = series.length ? series[0].data.map((point) => point.x) : [];
  const per = bar.split(" ")[0].toLowerCase();
  return (
    <table className="visually-hidden">
      <caption>File transfers per {per}, by protocol</caption>
      <thead>
        <tr>
          <th scope="col">{bar}</th>
          {series.map((s) => (
            <th key={s.name} scope="col">
              {s.name.toUpperCase()}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {bars.map((label, i) => (
          <tr key={label}>
            <th scope="row">{label}</th>
            {series.map((s) => (
              <td key={s.name}>{s.data[i] ? s.data[i].y : 0}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Whether a chart's series count no transfer at all. */
export const noTransfers = (series) =>
  series.every((s) => s.data.every((point) => !point.y));

export function TopUsers({ users }) {
  return (
    <section className="card">
      <h2>Top users</h2>
      {users.length === 0 ? (
        <p>No activity yet</p>
      ) : (
        <table className="top-users">
          <thead>
            <tr>
              <th scope="col">User</th>
              <th scope="col">Last login</th>
              <th scope="col">Transfers (30 days)</th>
            </tr>
          </thead>
          <tbody>
            {users.map((user) => (
              <tr key={user.id}>
                <td>{user.username}</td>
                <td>{formatTime(user.last_login, "never")}</td>
                <td>{user.count}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
