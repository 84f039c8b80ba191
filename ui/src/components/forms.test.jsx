import {
  fireEvent,
  render,
  screen,
  waitFor,
  within,
} from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ApiError } from "../lib/api.js";
import {
  fieldErrors,
  FormErrors,
  RadioGroup,
  TextField,
  useForm,
} from "./forms.jsx";
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
    expect(screen.getByText("Quota: Too big.")).toBeTruthy();
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

  it("name a field by its label in the notification, never its API name", async () => {
    function Password({ action }) {
      const form = useForm({ new_password1: "" });
      return (
        <form onSubmit={form.submit(action)}>
          <TextField form={form} name="new_password1" label="Pick a password" />
          <FormErrors form={form} />
          <button type="submit">Save</button>
        </form>
      );
    }
    render(
      <NotificationsProvider>
        <Password
          action={() => {
            throw new ApiError(400, {
              new_password1: ["This password is too short."],
              token: ["This link is invalid or has expired."],
            });
          }}
        />
      </NotificationsProvider>,
    );
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    const note = await screen.findByTestId("notification");
    expect(note.textContent).toBe(
      "Pick a password: This password is too short.",
    );
    // a link's token needs no label: its message speaks for itself
    expect(
      screen.getByText("This link is invalid or has expired.").tagName,
    ).toBe("P");
    expect(document.body.textContent).not.toMatch(/new_password1|token:/);
  });

  it("close a failed attempt's notifications when the next one succeeds", async () => {
    let fail = true;
    renderForm(() => {
      if (fail)
        throw new ApiError(400, { username: ["This username is taken."] });
    });
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await screen.findByTestId("notification");
    fail = false;
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() =>
      expect(screen.queryByTestId("notification")).toBeNull(),
    );
    expect(screen.queryByText("This username is taken.")).toBeNull();
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

describe("a radio group", () => {
  function Choice() {
    const form = useForm({ files: "keep" });
    return (
      <>
        <output>{form.values.files}</output>
        <RadioGroup
          form={form}
          name="files"
          label="What becomes of the files"
          options={[
            { value: "keep", label: "Keep the files", help: "They stay." },
            {
              value: "delete",
              label: "Delete the files",
              help: "This cannot be undone.",
            },
            { value: "move", label: "Move them", disabled: true },
          ]}
        />
      </>
    );
  }

  it("is named by its legend, says each option's help and changes the value", () => {
    render(
      <NotificationsProvider>
        <Choice />
      </NotificationsProvider>,
    );
    const group = screen.getByRole("group", {
      name: "What becomes of the files",
    });
    const radios = within(group).getAllByRole("radio");
    expect(radios.map((r) => r.checked)).toEqual([true, false, false]);
    expect(new Set(radios.map((r) => r.name)).size).toBe(1); // one group: arrow keys move in it
    const remove = screen.getByRole("radio", { name: "Delete the files" });
    expect(
      document.getElementById(remove.getAttribute("aria-describedby"))
        .textContent,
    ).toBe("This cannot be undone.");
    expect(screen.getByRole("radio", { name: "Move them" }).disabled).toBe(
      true,
    );
    fireEvent.click(remove);
    expect(remove.checked).toBe(true);
    expect(document.querySelector("output").textContent).toBe("delete");
  });
});
