import { describe, expect, it } from "vitest";
import { savedNote } from "./savedNote.js";

describe("the note after a mailbox is saved", () => {
  it("confirms a plain save briefly", () => {
    expect(savedNote("Created", { name: "Invoices" })).toEqual({
      message: "Created Invoices",
      options: { type: "positive" },
    });
  });

  it("keeps a warning the server gave until it is dismissed", () => {
    const note = savedNote("Saved", {
      name: "Invoices",
      warning:
        "Cannot resolve the host imap.example.com. The mailbox is saved.",
    });
    expect(note.message).toBe(
      "Saved Invoices. Cannot resolve the host imap.example.com. The mailbox is saved.",
    );
    expect(note.options).toEqual({ type: "warning", timeout: 0 });
  });
});
