import { describe, expect, it } from "vitest";
import { sourceBody, sourceValues } from "./components/SourceForm.jsx";
import { callbackTarget } from "./routes/SourceCallback.jsx";

describe("sources", () => {
  it("send the config of the chosen type, secrets only when typed", () => {
    const values = {
      ...sourceValues(null),
      name: " Archive ",
      config_path: " archive ",
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
      config_host: "sftp.example.com",
    };
    const body = sourceBody({ ...sftp, config_port: "2222" });
    expect(body.config).toMatchObject({ host: "sftp.example.com", port: 2222 });
    expect(body.config).not.toHaveProperty("password");
    expect(body.config).not.toHaveProperty("private_key");
  });

  it("finish a connection flow for the source it names", () => {
    expect(callbackTarget(new URLSearchParams("source=7"))).toEqual({
      id: 7,
      error: "",
    });
    expect(
      callbackTarget(new URLSearchParams("state=8&error=access_denied")),
    ).toEqual({
      id: 8,
      error: "access_denied",
    });
    expect(callbackTarget(new URLSearchParams("source=../x")).id).toBeNull();
  });
});
