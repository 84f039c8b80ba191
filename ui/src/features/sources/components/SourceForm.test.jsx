import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { SWRConfig } from "swr";
import { describe, expect, it, vi } from "vitest";
import { NotificationsProvider } from "../../../components/notifications.jsx";
import { ApiError } from "../../../lib/api.js";
import { stubApi } from "../../../test/server.js";
import { CheckConnection } from "./CheckConnection.jsx";
import { SignInWithProvider } from "./SignInWithProvider.jsx";
import { SourceForm } from "./SourceForm.jsx";

const SFTP = {
  id: 3,
  name: "Partner",
  type: "sftp",
  read_only: false,
  status: "ok",
  last_error: "",
  config: {
    host: "sftp.example.com",
    port: 22,
    username: "robot",
    path: "inbox",
    host_key_fingerprint: "SHA256:old",
    has_password: true,
    has_private_key: false,
  },
};

function renderForm(props) {
  const onSubmit = props.onSubmit || vi.fn(async () => {});
  render(
    <SWRConfig value={{ provider: () => new Map() }}>
      <NotificationsProvider>
        <SourceForm submitLabel="Save" {...props} onSubmit={onSubmit} />
      </NotificationsProvider>
    </SWRConfig>,
  );
  return onSubmit;
}

const type = (label, value) =>
  fireEvent.change(screen.getByLabelText(label, { exact: true }), {
    target: { value },
  });
const labels = () =>
  [...document.querySelectorAll(".source-config label")].map((l) =>
    l.textContent.trim(),
  );

describe("the source form", () => {
  it("shows the chosen type's fields", () => {
    renderForm({});
    expect(labels()).toEqual(["Folder"]);
    expect(
      [...screen.getByLabelText("Type").options].map((o) => o.textContent),
    ).toEqual(["Local folder", "S3-compatible bucket", "Remote SFTP server"]);

    type("Type", "sftp");
    expect(labels()).toEqual([
      "Host",
      "Port",
      "Username",
      "Password",
      "Private key",
      "Remote folder",
      "Host key fingerprint",
    ]);
    expect(screen.getByLabelText("Port").value).toBe("22");
    expect(screen.getByLabelText("Password").type).toBe("password");
    expect(screen.getByLabelText("Private key").tagName).toBe("TEXTAREA");
    expect(screen.getByLabelText("Host key fingerprint").readOnly).toBe(false);
    expect(screen.getByText(/pinned on first connect/)).toBeTruthy();

    type("Type", "s3");
    expect(labels()).toEqual([
      "Endpoint URL",
      "Region",
      "Bucket",
      "Prefix",
      "Authentication",
      "Access key",
      "Secret key",
      "Path-style addressing",
      "Verify the server's TLS certificate",
    ]);
    expect(screen.getByLabelText("Secret key").required).toBe(true);
    const verify = screen.getByLabelText("Verify the server's TLS certificate");
    expect(verify.checked).toBe(true);
    expect(screen.getByLabelText("Path-style addressing").checked).toBe(false);
    expect(screen.queryByRole("note")).toBeNull();
    fireEvent.click(verify);
    expect(screen.getByRole("note").textContent).toMatch(/can read the keys/);

    expect(screen.queryByTestId("redirect-uri")).toBeNull();
    type("Authentication", "oauth2");
    expect(labels()).toEqual([
      "Endpoint URL",
      "Region",
      "Bucket",
      "Prefix",
      "Authentication",
      "Authorize URL",
      "Token URL",
      "Client ID",
      "Client secret",
      "Scope",
      "Role ARN",
      "STS endpoint",
      "Path-style addressing",
      "Verify the server's TLS certificate",
    ]);
    expect(screen.getByLabelText("Client secret").type).toBe("password");
    expect(screen.getByTestId("redirect-uri").textContent).toContain(
      `${window.location.origin}/admin/sources/callback`,
    );
  });

  it("sends the typed type's config, and values typed before a switch survive it", async () => {
    const onSubmit = renderForm({});
    type("Name", "Partner");
    type("Folder", "archive");
    type("Type", "sftp");
    type("Host", "sftp.example.com");
    type("Username", "robot");
    type("Private key", "KEY");
    type("Type", "local");
    expect(screen.getByLabelText("Folder").value).toBe("archive");
    type("Type", "sftp");
    expect(screen.getByLabelText("Host").value).toBe("sftp.example.com");
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(onSubmit).toHaveBeenCalled());
    expect(onSubmit.mock.calls[0][0]).toEqual({
      name: "Partner",
      type: "sftp",
      read_only: false,
      config: {
        host: "sftp.example.com",
        port: 22,
        username: "robot",
        private_key: "KEY",
        path: "",
      },
    });
  });

  it("keeps write-only secrets unless typed, and the pinned key unless replaced", async () => {
    const onSubmit = renderForm({ source: SFTP });
    expect(screen.getByLabelText("Type").disabled).toBe(true);
    expect(screen.getByLabelText("Host").value).toBe("sftp.example.com");
    expect(screen.getByLabelText("Remote folder").value).toBe("inbox");
    const password = screen.getByLabelText("Password");
    expect(password.value).toBe("");
    expect(
      document.getElementById(password.getAttribute("aria-describedby"))
        .textContent,
    ).toBe("Saved — leave empty to keep.");
    // no key stored: no "saved" note on it
    const key = screen.getByLabelText("Private key");
    expect(
      document.getElementById(key.getAttribute("aria-describedby")).textContent,
    ).not.toMatch(/Saved/);
    const pinned = screen.getByLabelText("Host key fingerprint");
    expect(pinned.readOnly).toBe(true);
    expect(pinned.value).toBe("SHA256:old");
    expect(screen.getByText(/connections are refused until/)).toBeTruthy();

    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(onSubmit).toHaveBeenCalledTimes(1));
    const kept = onSubmit.mock.calls[0][0].config;
    expect(kept).not.toHaveProperty("password");
    expect(kept).not.toHaveProperty("private_key");
    expect(kept).not.toHaveProperty("host_key_fingerprint");

    fireEvent.click(
      screen.getByRole("button", { name: "Paste a new fingerprint" }),
    );
    type("New host key fingerprint", "SHA256:new");
    type("Password", "s3cret");
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(onSubmit).toHaveBeenCalledTimes(2));
    expect(onSubmit.mock.calls[1][0].config).toMatchObject({
      password: "s3cret",
      host_key_fingerprint: "SHA256:new",
    });

    fireEvent.click(
      screen.getByRole("button", { name: "Keep the pinned key" }),
    );
    expect(screen.getByLabelText("Host key fingerprint").value).toBe(
      "SHA256:old",
    );
  });

  it("shows the server's errors under the fields they name", async () => {
    renderForm({
      onSubmit: async () => {
        throw new ApiError(400, {
          config: [
            "Give the remote server's host name or address as config.host.",
            "Cannot connect to nowhere: refused.",
          ],
        });
      },
    });
    type("Name", "Partner");
    type("Type", "sftp");
    type("Host", "nowhere"); // required in the browser too
    type("Username", "robot");
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    const message = await screen.findByText(
      "Give the remote server's host name or address as config.host.",
      { selector: ".field-error" },
    );
    const host = screen.getByLabelText("Host");
    expect(host.getAttribute("aria-invalid")).toBe("true");
    expect(host.getAttribute("aria-describedby")).toContain(message.id);
    expect(screen.getByLabelText("Port").getAttribute("aria-invalid")).toBe(
      null,
    );
    // not about one field: shown once, above the fields
    expect(
      screen.getAllByText("Cannot connect to nowhere: refused.", {
        selector: ".field-error",
      }).length,
    ).toBe(1);
    expect(document.querySelector(".form-errors")).toBeNull();
  });

  it("puts a local source's folder errors under the folder", async () => {
    renderForm({
      onSubmit: async () => {
        throw new ApiError(400, {
          config: ["Local sources must be inside the organisation's folder."],
        });
      },
    });
    type("Name", "Archive");
    type("Folder", "/etc");
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() =>
      expect(screen.getByLabelText("Folder").getAttribute("aria-invalid")).toBe(
        "true",
      ),
    );
  });
});

it("an S3 source's stored secret key is not asked for again", () => {
  renderForm({
    source: {
      id: 4,
      name: "Bucket",
      type: "s3",
      read_only: false,
      config: {
        endpoint: "https://s3.example.com",
        region: "eu-west-1",
        bucket: "b",
        prefix: "",
        access_key: "AK",
        path_style: true,
        verify_tls: false,
        has_secret_key: true,
      },
    },
  });
  const secret = screen.getByLabelText("Secret key");
  expect(secret.required).toBe(false);
  expect(secret.value).toBe("");
  expect(screen.getByText("Saved — leave empty to keep.")).toBeTruthy();
  expect(screen.getByLabelText("Path-style addressing").checked).toBe(true);
  expect(screen.getByRole("note").textContent).toMatch(/Warning/);
});

describe("check connection", () => {
  function renderCheck(onChecked) {
    render(
      <SWRConfig value={{ provider: () => new Map() }}>
        <CheckConnection source={SFTP} onChecked={onChecked} />
      </SWRConfig>,
    );
  }

  it("posts the check and shows the outcome", async () => {
    const calls = stubApi({
      "POST sources/3/check/": () => [
        200,
        { ...SFTP, status: "error", last_error: "The host key has changed." },
      ],
    });
    const onChecked = vi.fn();
    renderCheck(onChecked);
    fireEvent.click(screen.getByRole("button", { name: "Check connection" }));
    await waitFor(() =>
      expect(screen.getByRole("status").textContent).toBe(
        " The host key has changed.",
      ),
    );
    expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      "POST sources/3/check/",
    ]);
    expect(onChecked.mock.calls[0][0].status).toBe("error");
  });

  it("says so when the connection works, and shows a refused call", async () => {
    stubApi({ "POST sources/3/check/": () => [200, { ...SFTP }] });
    renderCheck();
    fireEvent.click(screen.getByRole("button", { name: "Check connection" }));
    await screen.findByText("The connection works.", { exact: false });
    stubApi({
      "POST sources/3/check/": () => [403, { detail: "Not an admin." }],
    });
    fireEvent.click(screen.getByRole("button", { name: "Check connection" }));
    await screen.findByText("Not an admin.", { exact: false });
  });
});

describe("sign in with the provider", () => {
  const OIDC = {
    id: 5,
    name: "Bucket",
    type: "s3",
    read_only: false,
    status: "authorize",
    last_error: "Sign in with the provider to finish connecting this source.",
    config: { bucket: "b", auth: "oauth2", oauth: { signed_in: false } },
  };

  it("asks the appliance for the provider's page and goes there", async () => {
    const url = "https://login.example.com/authorize?state=s&code_challenge=c";
    const calls = stubApi({
      "POST sources/5/authorize/": () => [200, { url, redirect_uri: "x" }],
    });
    const assign = vi.fn();
    render(<SignInWithProvider source={OIDC} assign={assign} />);
    expect(screen.getByRole("status").textContent).toMatch(/Not signed in/);
    fireEvent.click(
      screen.getByRole("button", { name: "Sign in with the provider" }),
    );
    await waitFor(() => expect(assign).toHaveBeenCalledWith(url));
    expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      "POST sources/5/authorize/",
    ]);
  });

  it("is not offered for a source with keys", () => {
    render(<SignInWithProvider source={SFTP} />);
    expect(screen.queryByRole("button")).toBeNull();
  });
});
