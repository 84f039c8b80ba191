import { render, screen, waitFor } from "@testing-library/react";
import { SWRConfig } from "swr";
import { describe, expect, it } from "vitest";
import { stubApi } from "../../test/server.js";
import {
  EMPTY_FILTERS,
  LogFilters,
  filtersFromParams,
  paramsFromFilters,
} from "./LogFilters.jsx";

describe("the log filters", () => {
  it("offer every action the server lists, organisation_created too", async () => {
    const calls = stubApi({
      "GET logs/actions/": () => [
        200,
        { actions: ["login", "organisation_created", "billing"] },
      ],
    });
    render(
      <SWRConfig value={{ provider: () => new Map() }}>
        <LogFilters filters={EMPTY_FILTERS} onChange={() => {}} />
      </SWRConfig>,
    );
    const select = screen.getByRole("combobox", { name: "Action" });
    await waitFor(() =>
      expect([...select.options].map((o) => o.value)).toEqual([
        "",
        "login",
        "organisation_created",
        "billing",
      ]),
    );
    expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      "GET logs/actions/",
    ]);
  });

  it("live in the query string: what is set, and the page past the first", () => {
    const filters = {
      ...EMPTY_FILTERS,
      protocol: "ftp",
      date_from: "2026-11-01",
    };
    const params = paramsFromFilters(filters, 3);
    expect(params).toEqual({
      protocol: "ftp",
      date_from: "2026-11-01",
      page: "3",
    });
    expect(filtersFromParams(new URLSearchParams(params))).toEqual([
      filters,
      3,
    ]);
    expect(filtersFromParams(new URLSearchParams("page=x&evil=1"))).toEqual([
      EMPTY_FILTERS,
      1,
    ]);
  });
});
