import { describe, expect, it } from "vitest";
import {
  sourceBody,
  sourceFieldErrors,
  sourceLocation,
  sourceValues,
  typeLabel,
} from "./components/sourceTypes.js";
import { callbackBody } from "./routes/SourceCallback.jsx";

describe("sources", () => {
  it("send the config of the chosen type, secrets only when typed", () => {
    const values = {
      ...sourceValues(null),
      name: " Archive ",
      local_path: " archive ",
    };
    expect(sourceBody(values)).toEqual({
      name: "Archive",
      type: "local",
      read_only: false,
      config: { path: "archive" },
    });
    const sftp = {
      ...sourceValues(null),
      name: "Partner",
      type: "sftp",
      sftp_host: "sftp.example.com",
    };
    const body = sourceBody({ ...sftp, sftp_port: "2222" });
    expect(body.config).toMatchObject({ host: "sftp.example.com", port: 2222 });
    expect(body.config).not.toHaveProperty("password");
    expect(body.config).not.toHaveProperty("private_key");
  });

  it("keep each type's values apart and send the pinned key only when asked", () => {
    const values = { ...sourceValues(null), local_path: "archive" };
    expect(values.sftp_path).toBe("");
    expect(values.sftp_port).toBe(22);
    expect(values.s3_verify_tls).toBe(true);
    expect(values.s3_path_style).toBe(false);
    const typed = {
      ...values,
      name: "Partner",
      type: "sftp",
      sftp_host: "h",
      sftp_host_key_fingerprint: " SHA256:abc ",
    };
    expect(sourceBody(typed).config.host_key_fingerprint).toBe("SHA256:abc");
    const source = {
      id: 3,
      name: "Partner",
      type: "sftp",
      config: { host: "h", port: 22, host_key_fingerprint: "SHA256:old" },
    };
    const edit = sourceValues(source);
    expect(edit.sftp_host_key_fingerprint).toBe("SHA256:old");
    expect(sourceBody(edit, source).config).not.toHaveProperty(
      "host_key_fingerprint",
    );
    const replaced = {
      ...edit,
      replace_fingerprint: true,
      sftp_host_key_fingerprint: "SHA256:new",
    };
    expect(sourceBody(replaced, source).config.host_key_fingerprint).toBe(
      "SHA256:new",
    );
    const s3 = { ...sourceValues(null), name: "B", type: "s3", s3_bucket: "b" };
    expect(sourceBody(s3).config).toEqual({
      endpoint: "",
      region: "",
      bucket: "b",
      prefix: "",
      auth: "keys",
      access_key: "",
      path_style: false,
      verify_tls: true,
    });
  });

  it("send an OpenID Connect sign-in's settings under config.oauth, not the keys", () => {
    const values = {
      ...sourceValues(null),
      name: "B",
      type: "s3",
      s3_bucket: "b",
      s3_access_key: "typed before switching",
      s3_auth: "oauth2",
      s3_authorize_url: " https://login.example.com/authorize ",
      s3_token_url: "https://login.example.com/token",
      s3_client_id: "files",
    };
    const body = sourceBody(values);
    expect(body.config).not.toHaveProperty("access_key");
    expect(body.config.auth).toBe("oauth2");
    expect(body.config.oauth).toEqual({
      authorize_url: "https://login.example.com/authorize",
      token_url: "https://login.example.com/token",
      client_id: "files",
      scope: "",
      role_arn: "",
      sts_endpoint: "",
    }); // no client_secret: not typed, the saved one stays
    const withSecret = sourceBody({ ...values, s3_client_secret: "s" });
    expect(withSecret.config.oauth.client_secret).toBe("s");
    const source = {
      id: 3,
      name: "B",
      type: "s3",
      config: {
        bucket: "b",
        auth: "oauth2",
        oauth: {
          authorize_url: "https://a",
          token_url: "https://t",
          client_id: "c",
          scope: "openid offline_access",
          has_client_secret: true,
          signed_in: true,
        },
      },
    };
    const shown = sourceValues(source);
    expect(shown.s3_auth).toBe("oauth2");
    expect(shown.s3_scope).toBe("openid offline_access");
    expect(shown.s3_client_secret).toBe("");
    expect(sourceValues(null).s3_auth).toBe("keys");
  });

  it("put the server's config errors under their fields", () => {
    const data = {
      name: ["Another source has this name."],
      config: [
        "Give the remote server's host name or address as config.host.",
        "config.port must be a port number (1-65535).",
        "host_key_fingerprint must look like SHA256:<43 characters>.",
        "Cannot connect to h: refused.",
      ],
    };
    expect(sourceFieldErrors(data, "sftp")).toEqual({
      name: ["Another source has this name."],
      sftp_host: [
        "Give the remote server's host name or address as config.host.",
      ],
      sftp_port: ["config.port must be a port number (1-65535)."],
      sftp_host_key_fingerprint: [
        "host_key_fingerprint must look like SHA256:<43 characters>.",
      ],
      config: ["Cannot connect to h: refused."],
      detail: "Another source has this name.",
    });
    // no field named: the field the message is about, else above the fields
    expect(
      sourceFieldErrors(
        {
          config: [
            "Give the host key's SHA256 fingerprint as ssh-keygen -lf shows it (SHA256:...).",
            "h refused to sign in 'robot' with the password given: check the credentials.",
            "The folder /in does not exist on h.",
          ],
        },
        "sftp",
      ),
    ).toEqual({
      sftp_host_key_fingerprint: [
        "Give the host key's SHA256 fingerprint as ssh-keygen -lf shows it (SHA256:...).",
      ],
      sftp_password: [
        "h refused to sign in 'robot' with the password given: check the credentials.",
      ],
      sftp_path: ["The folder /in does not exist on h."],
      detail:
        "Give the host key's SHA256 fingerprint as ssh-keygen -lf shows it (SHA256:...).",
    });
    // a single-field type: every config message is the folder's
    expect(
      sourceFieldErrors(
        { config: ["That folder belongs to another."] },
        "local",
      ),
    ).toMatchObject({ local_path: ["That folder belongs to another."] });
    // dotted keys, nested maps and bare field names (the S3 contract)
    expect(
      sourceFieldErrors(
        {
          "config.bucket": ["Give the bucket."],
          config: { secret_key: "Wrong key." },
          region: ["Unknown region."],
        },
        "s3",
      ),
    ).toMatchObject({
      s3_bucket: ["Give the bucket."],
      s3_secret_key: ["Wrong key."],
      s3_region: ["Unknown region."],
    });
  });

  it("say where each type keeps its files", () => {
    expect(typeLabel("s3")).toBe("S3-compatible bucket");
    expect(
      sourceLocation({
        type: "sftp",
        config: { host: "h", port: 2222, username: "u", path: "in" },
      }),
    ).toBe("u@h:2222/in");
    expect(
      sourceLocation({ type: "s3", config: { bucket: "b", prefix: "p/" } }),
    ).toBe("b/p/");
    expect(sourceLocation({ type: "local", config: { path: "x" } })).toBe("x");
    expect(sourceLocation({ type: "local", config: { path: "." } })).toBe(
      "The organisation's folder",
    );
  });

  it("hand the provider's code and state (or its error) back to the appliance", () => {
    expect(callbackBody(new URLSearchParams("code=c1&state=s1"))).toEqual({
      code: "c1",
      state: "s1",
    });
    expect(
      callbackBody(
        new URLSearchParams(
          "state=s2&error=access_denied&error_description=No+thanks",
        ),
      ),
    ).toEqual({
      state: "s2",
      error: "access_denied",
      error_description: "No thanks",
    });
    expect(callbackBody(new URLSearchParams("code=c1"))).toBeNull(); // no state: not ours
    expect(callbackBody(new URLSearchParams("state=7"))).toBeNull();
  });
});
