import { render, screen, waitFor } from "@testing-library/react";
import { SWRConfig } from "swr";
import { describe, expect, it } from "vitest";
import { stubApi } from "../../test/server.js";
import { EMPTY_FILTERS, LogFilters } from "./LogFilters.jsx";

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
});
