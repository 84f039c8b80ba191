import { useState } from "react";
import { Link, Route, Routes, useNavigate, useParams } from "react-router";
import useSWR from "swr";
import { api } from "../../lib/api.js";
import { errorText, useNotify } from "../../components/notifications.jsx";

/** A searchable, paged list of one admin resource. */
function ResourceList({ title, path, columns, create, rowLink }) {
  const [search, setSearch] = useState("");
  const [page, setPage] = useState(1);
  const { data, error } = useSWR([path, { search, page, page_size: 25 }]);
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

function FieldErrors({ errors, name }) {
  return errors[name] ? <span className="field-error">{errors[name].join(" ")}</span> : null;
}

function ProfileCreate() {
  const navigate = useNavigate();
  const notify = useNotify();
  const [errors, setErrors] = useState({});
  async function submit(event) {
    event.preventDefault();
    const form = Object.fromEntries(new FormData(event.target));
    const body = { username: form.username, email: form.email, is_admin: form.is_admin === "on" };
    if (form.password) body.password = form.password;
    if (form.quota_bytes) body.quota_bytes = Number(form.quota_bytes);
    try {
      await api.post("profiles/", body);
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

function MailboxRuns() {
  const { pid } = useParams();
  return (
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
      <Route path="tokens" element={<ResourceList title="API Tokens" path="tokens/"
        columns={[["Name", (r) => r.name], ["Prefix", (r) => r.prefix], ["Scopes", (r) => r.scopes.join(", ")], ["Last used", (r) => r.last_used_at || "never"], ["Revoked", (r) => (r.revoked ? "yes" : "")]]} />} />
      <Route path="mailboxes" element={<ResourceList title="Mailboxes" path="mailboxes/" rowLink={(r) => `/admin/mailboxes/${r.id}/runs`}
        columns={[["Name", (r) => r.name], ["Host", (r) => `${r.host}:${r.port}`], ["Folder", (r) => r.folder], ["Enabled", (r) => (r.enabled ? "yes" : "no")], ["Last run", (r) => (r.last_run ? r.last_run.status : "never")]]} />} />
      <Route path="mailboxes/:pid/runs" element={<MailboxRuns />} />
      <Route path="logs" element={<ResourceList title="Logs" path="logs/"
        columns={[["Time", (r) => new Date(r.created_at).toLocaleString()], ["User", (r) => r.username], ["Protocol", (r) => r.protocol], ["Action", (r) => r.action], ["Message", (r) => r.message]]} />} />
      <Route path="god" element={<ResourceList title="Organisations" path="god/organisations/"
        columns={[["Name", (r) => r.name], ["Subdomain", (r) => r.subdomain], ["Status", (r) => r.status], ["Users", (r) => r.users], ["Trial days left", (r) => (r.on_trial ? r.days_left_on_trial : "")]]} />} />
      <Route path="organisation" element={<Organisation />} />
      <Route path="*" element={<div className="card"><h1>Not available yet</h1><p>This screen comes in a later release.</p></div>} />
    </Routes>
  );
}
