import { useState } from "react";
import { Link } from "react-router";
import { errorText } from "./notifications.jsx";

export function SearchBox({ value, onChange, label = "Search" }) {
  return (
    <label className="field search">
      <span>{label}</span>
      <input
        type="search"
        value={value}
        aria-label={label}
        onChange={(e) => onChange(e.target.value)}
      />
    </label>
  );
}

/** Previous / next over a paged reply ({count, next, previous, results}). */
export function Pager({ data, page, onPage }) {
  if (!data) return null;
  return (
    <div className="pager">
      <button
        className="flat"
        disabled={!data.previous}
        onClick={() => onPage(page - 1)}
      >
        Previous
      </button>
      <span>
        Page {page} · {data.count} in all
      </span>
      <button
        className="flat"
        disabled={!data.next}
        onClick={() => onPage(page + 1)}
      >
        Next
      </button>
    </div>
  );
}

/** A table of rows; `columns` are [label, row => value]; the first cell links to `rowLink(row)`. */
export function DataTable({
  columns,
  rows,
  rowLink,
  empty = "Nothing here yet.",
  loading,
  caption,
}) {
  return (
    // a region that takes focus: a table wider than a phone scrolls by keyboard too
    <div
      className="table-wrap"
      role="region"
      aria-label={caption || "Table"}
      tabIndex={0}
    >
      <table>
        {caption ? (
          <caption className="visually-hidden">{caption}</caption>
        ) : null}
        <thead>
          <tr>
            {columns.map(([label]) => (
              <th key={label} scope="col">
                {label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {loading ? (
            <tr>
              <td colSpan={columns.length}>Loading…</td>
            </tr>
          ) : rows.length === 0 ? (
            <tr>
              <td colSpan={columns.length}>{empty}</td>
            </tr>
          ) : (
            rows.map((row) => (
              <tr key={row.id}>
                {columns.map(([label, value], i) => {
                  const shown = value(row);
                  const text =
                    shown === null || shown === undefined ? "" : shown;
                  return (
                    <td key={label} data-label={label}>
                      {i === 0 && rowLink ? (
                        <Link to={rowLink(row)}>{text}</Link>
                      ) : (
                        text
                      )}
                    </td>
                  );
                })}
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}

/**
 * A searchable, paged list screen body: `useList(params)` is the feature's SWR
 * hook for its list endpoint; `filters` may add more query parameters.
 */
export function ResourceList({
  useList,
  columns,
  rowLink,
  searchable = true,
  searchLabel = "Search",
  filters = {},
  empty,
  caption,
}) {
  const [search, setSearch] = useState("");
  const [page, setPage] = useState(1);
  const params = {
    page,
    ...(searchable && search ? { search } : {}),
    ...filters,
  };
  const { data, error, isLoading } = useList(params);
  return (
    <>
      {searchable ? (
        <SearchBox
          label={searchLabel}
          value={search}
          onChange={(value) => {
            setSearch(value);
            setPage(1);
          }}
        />
      ) : null}
      {error ? (
        <p className="error" role="alert">
          {errorText(error)}
        </p>
      ) : null}
      <DataTable
        columns={columns}
        rows={data ? data.results : []}
        rowLink={rowLink}
        loading={isLoading && !data}
        empty={search ? "Nothing matches the search." : empty}
        caption={caption}
      />
      <Pager data={data} page={page} onPage={setPage} />
    </>
  );
}

/** A screen's title row with its actions. */
export function PageHeader({ title, back, children }) {
  return (
    <div className="page-header">
      <div>
        {back ? (
          <Link className="back" to={back[0]}>
            ← {back[1]}
          </Link>
        ) : null}
        <h1>{title}</h1>
      </div>
      <div className="toolbar">{children}</div>
    </div>
  );
}

export const yesNo = (value) => (value ? "yes" : "no");
