import { useSearchParams } from "react-router";
import { useLogActions } from "./getLogActions.js";

export const PROTOCOLS = ["sftp", "ftp", "web", "api", "mail", "system"];
export const EMPTY_FILTERS = {
  search: "",
  action: "",
  protocol: "",
  username: "",
  date_from: "",
  date_to: "",
};

/** Only the filters that are set, with dates as the server compares them (ISO, UTC). */
export function activeFilters(filters) {
  const active = {};
  for (const [name, value] of Object.entries(filters)) {
    if (!value) continue;
    if (name === "date_from")
      active[name] = new Date(`${value}T00:00:00`).toISOString();
    else if (name === "date_to") {
      const end = new Date(`${value}T00:00:00`);
      end.setDate(end.getDate() + 1); // up to the end of that day
      active[name] = end.toISOString();
    } else active[name] = value.trim();
  }
  return active;
}

/** The filters and page a query string holds (unknown keys are ignored). */
export function filtersFromParams(params) {
  const filters = { ...EMPTY_FILTERS };
  for (const name of Object.keys(EMPTY_FILTERS))
    filters[name] = params.get(name) || "";
  const page = Number.parseInt(params.get("page") || "1", 10);
  return [filters, Number.isFinite(page) && page > 0 ? page : 1];
}

/** The query string of these filters and page: only what is set, page 1 left out. */
export function paramsFromFilters(filters, page = 1) {
  const params = {};
  for (const [name, value] of Object.entries(filters))
    if (value) params[name] = value;
  if (page > 1) params.page = String(page);
  return params;
}

/**
 * A log screen's filters and page, kept in the address: a filtered view can be
 * shared, bookmarked and reloaded, and Back steps through pages.
 */
export function useLogFilters() {
  const [params, setParams] = useSearchParams();
  const [filters, page] = filtersFromParams(params);
  return {
    filters,
    page,
    // typing in a filter replaces the entry: one history step per view, not per key
    setFilters: (next) => setParams(paramsFromFilters(next), { replace: true }),
    setPage: (next) => setParams(paramsFromFilters(filters, next)),
  };
}

export function LogFilters({ filters, onChange, withUser = true }) {
  const { data: known } = useLogActions();
  const actions = (known && known.actions) || [];
  const set = (name) => (event) =>
    onChange({ ...filters, [name]: event.target.value });
  return (
    <div className="filters">
      <label className="field">
        <span>Search</span>
        <input
          type="search"
          aria-label="Search"
          value={filters.search}
          onChange={set("search")}
        />
      </label>
      <label className="field">
        <span>Action</span>
        <select value={filters.action} onChange={set("action")}>
          <option value="">all</option>
          {actions.map((a) => (
            <option key={a}>{a}</option>
          ))}
        </select>
      </label>
      <label className="field">
        <span>Protocol</span>
        <select value={filters.protocol} onChange={set("protocol")}>
          <option value="">all</option>
          {PROTOCOLS.map((p) => (
            <option key={p}>{p}</option>
          ))}
        </select>
      </label>
      {withUser ? (
        <label className="field">
          <span>User</span>
          <input value={filters.username} onChange={set("username")} />
        </label>
      ) : null}
      {"date_from" in filters ? (
        <>
          <label className="field">
            <span>From</span>
            <input
              type="date"
              value={filters.date_from}
              onChange={set("date_from")}
            />
          </label>
          <label className="field">
            <span>To</span>
            <input
              type="date"
              value={filters.date_to}
              onChange={set("date_to")}
            />
          </label>
        </>
      ) : null}
    </div>
  );
}
