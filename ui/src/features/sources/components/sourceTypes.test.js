import { describe, expect, it, vi } from "vitest";

// the API's declaration of a source's config, with a field the console has no words for
vi.mock("./sourceConfig.json", async (importOriginal) => {
  const declared = (await importOriginal()).default;
  return {
    default: {
      ...declared,
      properties: {
        ...declared.properties,
        timeout: { type: "integer", minimum: 1, maximum: 600, default: 30 },
      },
      "x-source-types": {
        ...declared["x-source-types"],
        sftp: [...declared["x-source-types"].sftp, "timeout"],
      },
    },
  };
});

const { CONFIG_FIELDS, sourceBody, sourceValues } =
  await import("./sourceTypes.js");

describe("source types", () => {
  it("take each type's fields from the API's declaration", () => {
    const [name, label, options] = CONFIG_FIELDS.sftp.at(-1);
    expect([name, label]).toEqual(["timeout", "timeout"]);
    expect(options).toMatchObject({ type: "number", min: 1, max: 600 });
    const values = { ...sourceValues(null), name: "P", type: "sftp" };
    expect(values.sftp_timeout).toBe(30);
    expect(sourceBody(values).config.timeout).toBe(30);
    expect(CONFIG_FIELDS.s3.map(([field]) => field)).toContain("client_id");
    const [, , clientId] = CONFIG_FIELDS.s3.find(([f]) => f === "client_id");
    expect(clientId.group).toBe("oauth");
  });
});
