import { useState } from "react";
import { Link } from "react-router";
import { LoadError } from "./notifications.jsx";
import { usePageTitle } from "./PageMeta.js";

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

/** A table's one row that says it is loading, or empty. */
export function MessageRow({ span, children }) {
  return (
    <tr>
      <td colSpan={span}>{children}</td>
    </tr>
  );
}

/**
 * A table of rows; `columns` are [label, row => value, {hideLabel, actions}] (a
 * hidden label is still read by screen readers; `actions`: the row's RowActions,
 * label hidden); the first cell links to `rowLink(row)`. On phones each row is a
 * card (CSS): the first cell its title, the actions at its top right, every other
 * cell under it with its column's label, empty ones left out; nothing scrolls sideways.
 */
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
      className="table-wrap cards-wrap"
      role="region"
      aria-label={caption || "Table"}
      tabIndex={0}
    >
      <table className="cards">
        {caption ? (
          <caption className="visually-hidden">{caption}</caption>
        ) : null}
        <thead>
          <tr>
            {columns.map(([label, , options]) => (
              <th
                key={label}
                scope="col"
                className={
                  options && options.actions ? "actions-cell" : undefined
                }
              >
                {options && (options.hideLabel || options.actions) ? (
                  <span className="visually-hidden">{label}</span>
                ) : (
                  label
                )}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {loading || rows.length === 0 ? (
            <MessageRow span={columns.length}>
              {loading ? "Loading…" : empty}
            </MessageRow>
          ) : (
            rows.map((row) => (
              <tr key={row.id}>
                {columns.map(([label, value, options], i) => {
                  const shown = value(row);
                  const text =
                    shown === null || shown === undefined ? "" : shown;
                  const kind =
                    options && options.actions
                      ? "actions-cell"
                      : text === ""
                        ? "empty"
                        : "";
                  return (
                    <td
                      key={label}
                      data-label={label}
                      className={kind || undefined}
                    >
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
 * One page of a paged reply ({count, next, previous, results}) as a table, with
 * the list's loading, empty and error states and the pager: every paged list in
 * the console looks and behaves the same.
 */
export function PagedTable({
  data,
  error,
  isLoading,
  page,
  onPage,
  columns,
  rowLink,
  empty,
  caption,
}) {
  return (
    <>
      <LoadError error={error} />
      <DataTable
        columns={columns}
        rows={data ? data.results : []}
        rowLink={rowLink}
        loading={!data && (isLoading === undefined ? !error : isLoading)}
        empty={empty}
        caption={caption}
      />
      <Pager data={data} page={page} onPage={onPage} />
    </>
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
      <PagedTable
        data={data}
        error={error}
        isLoading={isLoading}
        page={page}
        onPage={setPage}
        columns={columns}
        rowLink={rowLink}
        empty={search ? "Nothing matches the search." : empty}
        caption={caption}
      />
    </>
  );
}

/**
 * An admin list screen: its title (also the page's), a Create link to
 * `createTo` (or other `actions`), an optional `help` line, and the list.
 */
export function ResourceListPage({ title, createTo, actions, help, ...list }) {
  usePageTitle(title);
  return (
    <>
      <PageHeader title={title}>
        {createTo ? (
          <Link className="button" to={createTo}>
            Create
          </Link>
        ) : null}
        {actions}
      </PageHeader>
      {help ? <p className="help">{help}</p> : null}
      <ResourceList caption={title} {...list} />
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
