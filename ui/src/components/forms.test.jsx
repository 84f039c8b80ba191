import { fireEvent, render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ApiError } from "../lib/api.js";
import { fieldErrors, FormErrors, TextField, useForm } from "./forms.jsx";
import { NotificationsProvider } from "./notifications.jsx";

function Form({ action }) {
  const form = useForm({ username: "", email: "" });
  return (
    <form onSubmit={form.submit(action)}>
      <TextField form={form} name="username" label="Username" />
      <TextField form={form} name="email" label="Email" />
      <FormErrors form={form} />
      <button type="submit">Save</button>
    </form>
  );
}

const renderForm = (action) =>
  render(
    <NotificationsProvider>
      <Form action={action} />
    </NotificationsProvider>,
  );

describe("forms", () => {
  it("show the server's field errors next to their fields, others below", async () => {
    renderForm(() => {
      throw new ApiError(400, {
        username: ["This username is taken."],
        quota: ["Too big."],
      });
    });
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    const message = await screen.findByText("This username is taken.");
    const input = screen.getByLabelText("Username");
    expect(input.getAttribute("aria-invalid")).toBe("true");
    expect(input.getAttribute("aria-describedby")).toContain(message.id);
    expect(screen.getByText("quota: Too big.")).toBeTruthy();
  });

  it("show a detail reply as the form's error and a notification", async () => {
    renderForm(() => {
      throw new ApiError(403, {
        detail: "You do not have permission to perform this action.",
      });
    });
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    const shown = await screen.findAllByText(
      "You do not have permission to perform this action.",
    );
    expect(shown.length).toBe(2); // under the form and as a notification
  });

  it("pass the values typed to the action", async () => {
    let got;
    renderForm((values) => {
      got = values;
    });
    fireEvent.change(screen.getByLabelText("Username"), {
      target: { value: "walter" },
    });
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await screen.findByRole("button", { name: "Save" });
    expect(got).toEqual({ username: "walter", email: "" });
  });

  it("read field errors from an API error's data", () => {
    expect(
      fieldErrors({ data: { detail: "x", a: ["one", "two"], b: "three" } }),
    ).toEqual({
      a: ["one", "two"],
      b: ["three"],
    });
  });
});
