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

export function TopUsers({ users }) {
  return (
    <section className="card">
      <h2>Top users</h2>
      {users.length === 0 ? (
        <p>No activity yet</p>
      ) : (
        <table>
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
