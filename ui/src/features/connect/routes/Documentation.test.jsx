import { render, screen, within } from "@testing-library/react";
import { SWRConfig } from "swr";
import { describe, expect, it } from "vitest";
import { DOCUMENTATION_URL } from "../../../config/brand.js";
import { paths } from "../../../config/routes.js";
import { stubApi } from "../../../test/server.js";
import { connectionValues, Documentation } from "./Documentation.jsx";

const INFORMATION = {
  source: "Default",
  hostname: "files.example.com",
  username: "alice",
  sftp_port: 2222,
  ftp_port: 2121,
  host_keys: [{ type: "ssh-ed25519", fingerprint: "SHA256:abcDEF123" }],
};

function renderDocs() {
  return render(
    <SWRConfig value={{ provider: () => new Map(), shouldRetryOnError: false }}>
      <Documentation />
    </SWRConfig>,
  );
}

describe("the documentation page", () => {
  it("is where every Documentation link points", () => {
    expect(DOCUMENTATION_URL).toBe(paths.docs);
    expect(paths.docs).toBe("/docs");
  });

  it("shows this portal's host, ports and fingerprints in every example", async () => {
    stubApi({ "GET dashboard/information/": () => [200, INFORMATION] });
    renderDocs();
    const details = await screen.findByTestId("docs-details");
    expect(await within(details).findByText("files.example.com")).toBeTruthy();
    expect(screen.getByTestId("docs-sftp-port").textContent).toBe("2222");
    expect(screen.getByTestId("docs-ftp-port").textContent).toBe("2121");
    expect(
      screen.getByText("ssh-ed25519 SHA256:abcDEF123", { exact: false }),
    ).toBeTruthy();
    const commands = [...document.querySelectorAll("pre.command")].map(
      (pre) => pre.textContent,
    );
    expect(commands).toContain("sftp -P 2222 alice@files.example.com");
    expect(commands.join("\n")).toContain(
      "scp -P 2222 report.pdf alice@files.example.com:/",
    );
    expect(commands.join("\n")).toContain(
      "curl --ssl-reqd -u alice ftp://files.example.com:2121/",
    );
    expect(commands.join("\n")).toContain("lftp -p 2121 -u alice");
    expect(commands.join("\n")).toContain(
      "rclone config create portal sftp host=files.example.com port=2222 user=alice",
    );
    for (const client of ["FileZilla", "WinSCP", "rclone", "Share links"])
      expect(screen.getByRole("heading", { name: client })).toBeTruthy();
    expect(screen.getByText(/Your portal password/)).toBeTruthy();
  });

  it("leaves the standard ports out of the commands", () => {
    const values = connectionValues(
      { hostname: "h", username: "u", sftp_port: 22, ftp_port: 21 },
      { hostname: "page-host" },
    );
    expect(values).toMatchObject({ host: "h", sftpPort: 22, ftpPort: 21 });
    expect(connectionValues(null, { hostname: "page-host" })).toMatchObject({
      host: "page-host",
      sftpPort: 22,
      ftpPort: 21,
    });
  });
});
