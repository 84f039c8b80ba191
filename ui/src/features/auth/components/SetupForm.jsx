import { FormErrors, TextField, useForm } from "../../../components/forms.jsx";
import { SIGN_IN_PASSWORD_HELP } from "../../../lib/passwords.js";
import { setup } from "../api/setup.js";

/** First run: the first organisation and its administrator (who also runs the appliance). */
export function SetupForm({ onSignedIn }) {
  const form = useForm({
    organisation: "",
    username: "",
    email: "",
    password: "",
  });
  return (
    <form
      className="card"
      onSubmit={form.submit(async (values) => onSignedIn(await setup(values)))}
    >
      <h1>Set up the appliance</h1>
      <p>
        Create the first organisation and its administrator, who also runs the
        appliance.
      </p>
      <TextField
        form={form}
        name="organisation"
        label="Organisation"
        required
      />
      <TextField
        form={form}
        name="username"
        label="Username"
        autoComplete="username"
        required
      />
      <TextField form={form} name="email" label="Email" type="email" required />
      <TextField
        form={form}
        name="password"
        label="Password"
        type="password"
        autoComplete="new-password"
        help={SIGN_IN_PASSWORD_HELP}
        required
      />
      <FormErrors form={form} />
      <div className="actions">
        <button type="submit" disabled={form.busy}>
          Create
        </button>
      </div>
    </form>
  );
}
