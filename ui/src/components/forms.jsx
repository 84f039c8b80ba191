import { useCallback, useEffect, useId, useRef, useState } from "react";
import { fieldMessage } from "../lib/fieldLabels.js";
import { errorText, useNotify } from "./notifications.jsx";

/** The messages of a 400 reply's fields ({field: [messages]}), without `detail`. */
export function fieldErrors(error) {
  const data = (error && error.data) || {};
  const fields = {};
  for (const [name, value] of Object.entries(data)) {
    if (name === "detail") continue;
    if (Array.isArray(value)) fields[name] = value.map(String);
    else if (typeof value === "string") fields[name] = [value];
  }
  return fields;
}

/**
 * A form's values, its server errors and its busy state. `submit(action)` gives an
 * onSubmit handler that runs `action(values)`, shows the server's field errors next
 * to the fields and the rest as a notification, a field named by its label. A new
 * attempt closes the notifications of the failed ones before it, so none is left
 * beside the success message.
 */
export function useForm(initial) {
  const notify = useNotify();
  const [values, setValues] = useState(initial);
  const [errors, setErrors] = useState({});
  const [busy, setBusy] = useState(false);
  const labels = useRef({}); // field name -> its label, as the form's fields say
  const failures = useRef([]); // closers of this form's error notifications
  const setValue = (name, value) =>
    setValues((all) => ({ ...all, [name]: value }));
  const setLabel = useCallback((name, label) => {
    if (typeof label === "string") labels.current[name] = label;
  }, []);
  const submit = (action) => async (event) => {
    if (event) event.preventDefault();
    setBusy(true);
    setErrors({});
    failures.current.splice(0).forEach((close) => close());
    try {
      await action(values);
    } catch (error) {
      const fields = fieldErrors(error);
      setErrors(
        Object.keys(fields).length
          ? fields
          : { detail: [errorText(error, labels.current)] },
      );
      failures.current.push(
        notify(errorText(error, labels.current), { type: "negative" }),
      );
    } finally {
      setBusy(false);
    }
  };
  return {
    setLabel,
    labels: () => labels.current,
    values,
    setValue,
    setValues,
    errors,
    setErrors,
    busy,
    submit,
    known: Object.keys(initial),
  };
}

function FieldError({ form, name, id }) {
  const messages = form.errors[name];
  return messages ? (
    <span className="field-error" id={id} role="alert">
      {messages.join(" ")}
    </span>
  ) : null;
}

/** A labelled control with its help and its server error (described-by, not in the label). */
function Field({ form, name, label, help, children }) {
  const id = useId();
  const { setLabel } = form;
  useEffect(() => setLabel(name, label), [setLabel, name, label]);
  const invalid = Boolean(form.errors[name]);
  const described = [help ? `${id}-help` : null, invalid ? `${id}-error` : null]
    .filter(Boolean)
    .join(" ");
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({
        id,
        name,
        "aria-invalid": invalid ? true : undefined,
        "aria-describedby": described || undefined,
      })}
      {help ? (
        <small className="help" id={`${id}-help`}>
          {help}
        </small>
      ) : null}
      <FieldError form={form} name={name} id={`${id}-error`} />
    </div>
  );
}

const shown = (value) => (value === null || value === undefined ? "" : value);

export function TextField({
  form,
  name,
  label,
  help,
  type = "text",
  ...props
}) {
  return (
    <Field form={form} name={name} label={label} help={help}>
      {(control) => (
        <input
          {...control}
          type={type}
          value={shown(form.values[name])}
          onChange={(e) => form.setValue(name, e.target.value)}
          {...props}
        />
      )}
    </Field>
  );
}

export function TextareaField({ form, name, label, help, rows = 6, ...props }) {
  return (
    <Field form={form} name={name} label={label} help={help}>
      {(control) => (
        <textarea
          {...control}
          rows={rows}
          value={shown(form.values[name])}
          onChange={(e) => form.setValue(name, e.target.value)}
          {...props}
        />
      )}
    </Field>
  );
}

export function SelectField({ form, name, label, options, help, ...props }) {
  return (
    <Field form={form} name={name} label={label} help={help}>
      {(control) => (
        <select
          {...control}
          value={shown(form.values[name])}
          onChange={(e) => form.setValue(name, e.target.value)}
          {...props}
        >
          {options.map((option) => {
            const [value, text] = Array.isArray(option)
              ? option
              : [option, option];
            return (
              <option key={value} value={value}>
                {text}
              </option>
            );
          })}
        </select>
      )}
    </Field>
  );
}

export function CheckboxField({ form, name, label, ...props }) {
  return (
    <div className="field">
      <label className="check">
        <input
          type="checkbox"
          name={name}
          checked={Boolean(form.values[name])}
          onChange={(e) => form.setValue(name, e.target.checked)}
          {...props}
        />
        {label}
      </label>
      <FieldError form={form} name={name} />
    </div>
  );
}

/** Several checkboxes whose checked values make one list field. */
export function CheckboxGroup({ form, name, label, options }) {
  const chosen = form.values[name] || [];
  const toggle = (value, on) =>
    form.setValue(
      name,
      on ? [...chosen, value] : chosen.filter((v) => v !== value),
    );
  return (
    <fieldset className="field">
      <legend>{label}</legend>
      <div className="checks">
        {options.map((option) => {
          const [value, text] = Array.isArray(option)
            ? option
            : [option, option];
          return (
            <label key={value} className="check">
              <input
                type="checkbox"
                checked={chosen.includes(value)}
                onChange={(e) => toggle(value, e.target.checked)}
              />
              {text}
            </label>
          );
        })}
      </div>
      <FieldError form={form} name={name} />
    </fieldset>
  );
}

/**
 * One choice of several as radio buttons under a legend (a fieldset: a screen reader
 * names the group by it). `options` are {value, label, help, disabled}; an option's
 * help is read as its description.
 */
export function RadioGroup({ form, name, label, options }) {
  const id = useId();
  const { setLabel } = form;
  useEffect(() => setLabel(name, label), [setLabel, name, label]);
  const invalid = Boolean(form.errors[name]);
  return (
    <fieldset
      className="field radios"
      aria-describedby={invalid ? `${id}-error` : undefined}
    >
      <legend>{label}</legend>
      {options.map((option, i) => (
        <div className="radio" key={option.value}>
          <label className="check">
            <input
              type="radio"
              name={`${id}-${name}`}
              value={option.value}
              checked={form.values[name] === option.value}
              disabled={option.disabled}
              aria-describedby={option.help ? `${id}-${i}-help` : undefined}
              onChange={() => form.setValue(name, option.value)}
            />
            {option.label}
          </label>
          {option.help ? (
            <small className="help" id={`${id}-${i}-help`}>
              {option.help}
            </small>
          ) : null}
        </div>
      ))}
      <FieldError form={form} name={name} id={`${id}-error`} />
    </fieldset>
  );
}

/** The errors no field shows: `detail`, and fields this form does not have. */
export function FormErrors({ form }) {
  const rest = Object.entries(form.errors).filter(
    ([name]) => !form.known.includes(name),
  );
  if (!rest.length) return null;
  return (
    <div className="error form-errors" role="alert">
      {rest.map(([name, messages]) => (
        <p key={name}>{fieldMessage(name, messages, form.labels())}</p>
      ))}
    </div>
  );
}

/** Lines of a textarea as a list (blank lines dropped). */
export const lines = (text) =>
  String(text || "")
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);

/** A number input's value as a whole number, or null when empty. */
export const wholeOrNull = (value) =>
  value === "" || value === null || value === undefined ? null : Number(value);
