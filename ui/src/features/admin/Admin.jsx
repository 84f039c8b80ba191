import { useState } from "react";
import { Link, Route, Routes, useNavigate, useParams } from "react-router";
import useSWR, { useSWRConfig } from "swr";
import { api } from "../../lib/api.js";
import { errorText, useNotify } from "../../components/notifications.jsx";

/** A searchable, paged list of one admin resource (with extra filters when given). */
function ResourceList({ title, path, columns, create, rowLink, filters, extra }) {
  const [search, setSearch] = useState("");
  const [page, setPage] = useState(1);
  const [chosen, setChosen] = useState({});
  const params = { search, page, page_size: 25, ...chosen };
  const { data, error } = useSWR([path, params]);
  return (
    <>
      <div className="toolbar">
        <h1 style={{ flex: 1 }}>{title}</h1>
        {create ? <Link className="button" to={create}>Create</Link> : null}
      </div>
      <label>
        <span>Search</span>
        <input value={search} onChange={(e) => { setSearch(e.target.value); setPage(1); }} aria-label="Search" />
      </label>
      {filters ? (
        <div className="toolbar">
          {Object.entries(filters).map(([name, options]) => (
            <label key={name} style={{ width: "auto" }}>
              <span>{name}</span>
              <select value={chosen[name] || ""} onChange={(e) => { setChosen({ ...chosen, [name]: e.target.value }); setPage(1); }}>
                <option value="">all</option>
                {options.map((o) => <option key={o}>{o}</option>)}
              </select>
            </label>
          ))}
          {extra ? extra(params) : null}
        </div>
      ) : null}
      {error ? <p className="error" role="alert">{errorText(error)}</p> : null}
      <table>
        <thead><tr>{columns.map(([label]) => <th key={label}>{label}</th>)}</tr></thead>
        <tbody>
          {data && data.results.length === 0 ? <tr><td colSpan={columns.length}>Nothing here yet.</td></tr> : null}
          {(data ? data.results : []).map((row) => (
            <tr key={row.id}>
              {columns.map(([label, value], i) => (
                <td key={label}>{i === 0 && rowLink ? <Link to={rowLink(row)}>{String(value(row) ?? "")}</Link> : String(value(row) ?? "")}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {data ? (
        <div className="toolbar">
          <button className="flat" disabled={!data.previous} onClick={() => setPage(page - 1)}>Previous</button>
          <span>{data.count} in all</span>
          <button className="flat" disabled={!data.next} onClick={() => setPage(page + 1)}>Next</button>
        </div>
      ) : null}
    </>
  );
}

/** After a change: refetch every list of this resource. */
function useRevalidate(path) {
  const { mutate } = useSWRConfig();
  return () => mutate((key) => Array.isArray(key) && key[0] === path);
}

async function exportLogs(params) {
  const blob = await api.download("logs/export/", { ...params, page: undefined, page_size: undefined });
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = "audit-log.csv";
  link.click();
}

function FieldErrors({ errors, name }) {
  return errors[name] ? <span className="field-error">{errors[name].join(" ")}</span> : null;
}

function ProfileCreate() {
  const navigate = useNavigate();
  const notify = useNotify();
  const revalidate = useRevalidate("profiles/");
  const [errors, setErrors] = useState({});
  async function submit(event) {
    event.preventDefault();
    const form = Object.fromEntries(new FormData(event.target));
    const body = { username: form.username, email: form.email, is_admin: form.is_admin === "on" };
    if (form.password) body.password = form.password;
    if (form.quota_bytes) body.quota_bytes = Number(form.quota_bytes);
    try {
      await api.post("profiles/", body);
      await revalidate();
      notify(`Created ${form.username}`, { type: "positive" });
      navigate("/admin/profiles");
    } catch (e) {
      setErrors(e.data || {});
      notify(errorText(e), { type: "negative" });
    }
  }
  return (
    <form className="card" onSubmit={submit}>
      <h1>Create a profile</h1>
      <label><span>Username</span><input name="username" required /><FieldErrors errors={errors} name="username" /></label>
      <label><span>Email</span><input name="email" type="email" required /><FieldErrors errors={errors} name="email" /></label>
      <label><span>Password (leave empty to send an invitation)</span><input name="password" type="password" autoComplete="new-password" /><FieldErrors errors={errors} name="password" /></label>
      <label><span>Quota in bytes (empty: no limit)</span><input name="quota_bytes" type="number" min="0" /><FieldErrors errors={errors} name="quota_bytes" /></label>
      <label style={{ display: "flex", gap: "0.5rem" }}><input name="is_admin" type="checkbox" style={{ width: "auto" }} /> Administrator</label>
      <div className="actions"><button type="submit">Create</button></div>
    </form>
  );
}

function TokenCreate() {
  const notify = useNotify();
  const revalidate = useRevalidate("tokens/");
  const [created, setCreated] = useState(null);
  const [errors, setErrors] = useState({});
  async function submit(event) {
    event.preventDefault();
    const form = new FormData(event.target);
    const scopes = ["files", "admin"].filter((scope) => form.get(scope) === "on");
    try {
      setCreated(await api.post("tokens/", { name: form.get("name"), scopes, expires_at: form.get("expires_at") || null }));
      await revalidate();
    } catch (e) {
      setErrors(e.data || {});
      notify(errorText(e), { type: "negative" });
    }
  }
  if (created) {
    return (
      <div className="card">
        <h1>Token created</h1>
        <p>Copy the token now: it is shown only this once.</p>
        <p><code data-testid="token-secret">{created.token}</code></p>
        <div className="actions">
          <button onClick={() => navigator.clipboard.writeText(created.token).then(() => notify("Copied", { type: "positive" }))}>Copy</button>
          <Link className="button" to="/admin/tokens">Done</Link>
        </div>
      </div>
    );
  }
  return (
    <form className="card" onSubmit={submit}>
      <h1>Create an API token</h1>
      <label><span>Name (what will use it)</span><input name="name" required /><FieldErrors errors={errors} name="name" /></label>
      <label style={{ display: "flex", gap: "0.5rem" }}><input name="files" type="checkbox" defaultChecked style={{ width: "auto" }} /> Files</label>
      <label style={{ display: "flex", gap: "0.5rem" }}><input name="admin" type="checkbox" style={{ width: "auto" }} /> Administration</label>
      <FieldErrors errors={errors} name="scopes" />
      <label><span>Expires (optional, e.g. 2027-12-31T00:00:00Z)</span><input name="expires_at" /><FieldErrors errors={errors} name="expires_at" /></label>
      <div className="actions"><button type="submit">Create</button></div>
    </form>
  );
}

function MailboxForm() {
  const navigate = useNavigate();
  const notify = useNotify();
  const revalidate = useRevalidate("mailboxes/");
  const [errors, setErrors] = useState({});
  async function submit(event) {
    event.preventDefault();
    const form = Object.fromEntries(new FormData(event.target));
    const body = {
      name: form.name, host: form.host, port: Number(form.port), security: form.security, verify_tls: form.verify_tls === "on",
      username: form.username, password: form.password, folder: form.folder || "INBOX", target_folder: form.target_folder,
      keep: form.keep, after: form.after, move_to: form.move_to, interval_minutes: Number(form.interval_minutes),
    };
    try {
      await api.post("mailboxes/", body);
      await revalidate();
      notify(`Created ${form.name}`, { type: "positive" });
      navigate("/admin/mailboxes");
    } catch (e) {
      setErrors(e.data || {});
      notify(errorText(e), { type: "negative" });
    }
  }
  const field = (name, label, props = {}) => (
    <label><span>{label}</span><input name={name} {...props} /><FieldErrors errors={errors} name={name} /></label>
  );
  const choice = (name, label, options) => (
    <label><span>{label}</span><select name={name}>{options.map((o) => <option key={o}>{o}</option>)}</select><FieldErrors errors={errors} name={name} /></label>
  );
  return (
    <form className="card" onSubmit={submit}>
      <h1>Create a mailbox</h1>
      {field("name", "Name", { required: true })}
      {field("host", "IMAP host", { required: true })}
      {field("port", "Port", { type: "number", defaultValue: 993 })}
      {choice("security", "Security", ["tls", "starttls", "none"])}
      <label style={{ display: "flex", gap: "0.5rem" }}><input name="verify_tls" type="checkbox" defaultChecked style={{ width: "auto" }} /> Verify the server's certificate</label>
      {field("username", "Username", { required: true })}
      {field("password", "Password", { type: "password" })}
      {field("folder", "Folder", { defaultValue: "INBOX" })}
      {field("target_folder", "Save into", { defaultValue: "/mail/{date}" })}
      {choice("keep", "Keep", ["attachments", "message"])}
      {choice("after", "Afterwards", ["seen", "move", "delete"])}
      {field("move_to", "Move to folder (when moving)")}
      {field("interval_minutes", "Check every (minutes)", { type: "number", defaultValue: 5 })}
      <div className="actions"><button type="submit">Create</button></div>
    </form>
  );
}

function MailboxRuns() {
  const { pid } = useParams();
  const notify = useNotify();
  const { mutate } = useSWRConfig();
  async function runNow() {
    try {
      await api.post(`mailboxes/${pid}/run/`);
      notify("Checking the mailbox now", { type: "info" });
      setTimeout(() => mutate((key) => Array.isArray(key) && key[0] === `mailboxes/${pid}/runs/`), 1500);
    } catch (e) {
      notify(errorText(e), { type: "negative" });
    }
  }
  return (
    <>
      <div className="toolbar"><button onClick={runNow}>Run now</button></div>
      <ResourceList
      title="Mailbox runs"
      path={`mailboxes/${pid}/runs/`}
      columns={[
        ["Started", (r) => new Date(r.started_at).toLocaleString()],
        ["Status", (r) => r.status],
        ["Messages", (r) => r.messages],
        ["Files", (r) => r.files],
        ["Bytes", (r) => r.bytes],
        ["Error", (r) => r.error],
      ]}
    />
    </>
  );
}

function Organisation() {
  const notify = useNotify();
  const { data, mutate } = useSWR("organisation/");
  const [errors, setErrors] = useState({});
  const organisation = data && data[0];
  if (!organisation) return <p>Loading…</p>;
  async function submit(event) {
    event.preventDefault();
    const form = Object.fromEntries(new FormData(event.target));
    try {
      await api.patch(`organisation/${organisation.id}/`, {
        name: form.name, branding: form.branding === "on", branding_colour: form.branding_colour || null, user_terms: form.user_terms,
      });
      setErrors({});
      notify("Saved", { type: "positive" });
      mutate();
    } catch (e) {
      setErrors(e.data || {});
    }
  }
  return (
    <form className="card" onSubmit={submit}>
      <h1>Organisation settings</h1>
      <p>Status: {organisation.status}{organisation.on_trial ? ` (${organisation.days_left_on_trial} days left on trial)` : ""}</p>
      <label><span>Name</span><input name="name" defaultValue={organisation.name} /><FieldErrors errors={errors} name="name" /></label>
      <label style={{ display: "flex", gap: "0.5rem" }}><input name="branding" type="checkbox" defaultChecked={organisation.branding} style={{ width: "auto" }} /> Use our branding</label>
      <label><span>Branding colour (#RRGGBB)</span><input name="branding_colour" defaultValue={organisation.branding_colour || ""} pattern="#[0-9A-Fa-f]{6}" /><FieldErrors errors={errors} name="branding_colour" /></label>
      <label><span>User terms</span><textarea name="user_terms" rows={6} defaultValue={organisation.user_terms} /></label>
      <div className="actions"><button type="submit">Save</button></div>
    </form>
  );
}

function UserTerms() {
  const { data } = useSWR("organisation/");
  const terms = data && data[0] && data[0].user_terms;
  return (
    <div className="card">
      <h1>User terms</h1>
      <p style={{ whiteSpace: "pre-wrap" }}>{terms || "Your organisation has not written user terms."}</p>
    </div>
  );
}

export default function Admin({ terms }) {
  if (terms) return <UserTerms />;
  return (
    <Routes>
      <Route path="profiles" element={<ResourceList title="Profiles" path="profiles/" create="/admin/profiles/create"
        columns={[["Username", (r) => r.username], ["Email", (r) => r.email], ["Admin", (r) => (r.is_admin ? "yes" : "")],
          ["Active", (r) => (r.active ? "yes" : "no")], ["Last login", (r) => r.last_login || "never"]]} />} />
      <Route path="profiles/create" element={<ProfileCreate />} />
      <Route path="sources" element={<ResourceList title="Sources" path="sources/"
        columns={[["Name", (r) => r.name], ["Type", (r) => r.type], ["Folder", (r) => r.config.path], ["Status", (r) => r.status], ["Error", (r) => r.last_error]]} />} />
      <Route path="tokens/create" element={<TokenCreate />} />
      <Route path="tokens" element={<ResourceList title="API Tokens" path="tokens/" create="/admin/tokens/create"
        columns={[["Name", (r) => r.name], ["Prefix", (r) => r.prefix], ["Scopes", (r) => r.scopes.join(", ")], ["Last used", (r) => r.last_used_at || "never"], ["Revoked", (r) => (r.revoked ? "yes" : "")]]} />} />
      <Route path="mailboxes/create" element={<MailboxForm />} />
      <Route path="mailboxes" element={<ResourceList title="Mailboxes" path="mailboxes/" create="/admin/mailboxes/create" rowLink={(r) => `/admin/mailboxes/${r.id}/runs`}
        columns={[["Name", (r) => r.name], ["Host", (r) => `${r.host}:${r.port}`], ["Folder", (r) => r.folder], ["Enabled", (r) => (r.enabled ? "yes" : "no")], ["Last run", (r) => (r.last_run ? r.last_run.status : "never")]]} />} />
      <Route path="mailboxes/:pid/runs" element={<MailboxRuns />} />
      <Route path="logs" element={<ResourceList title="Logs" path="logs/"
        filters={{ action: ["login", "login_failed", "upload", "download", "delete", "rename", "mkdir", "ban"], protocol: ["sftp", "ftp", "web", "api", "mail", "system"] }}
        extra={(params) => <button onClick={() => exportLogs(params)}>Export CSV</button>}
        columns={[["Time", (r) => new Date(r.created_at).toLocaleString()], ["User", (r) => r.username], ["Protocol", (r) => r.protocol], ["Action", (r) => r.action], ["Message", (r) => r.message]]} />} />
      <Route path="god" element={<ResourceList title="Organisations" path="god/organisations/"
        columns={[["Name", (r) => r.name], ["Subdomain", (r) => r.subdomain], ["Status", (r) => r.status], ["Users", (r) => r.users], ["Trial days left", (r) => (r.on_trial ? r.days_left_on_trial : "")]]} />} />
      <Route path="organisation" element={<Organisation />} />
      <Route path="*" element={<div className="card"><h1>Not available yet</h1><p>This screen comes in a later release.</p></div>} />
    </Routes>
  );
}
