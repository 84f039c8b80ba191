import { useState } from "react";
import { Link } from "react-router";
import { CopyButton } from "../../../components/CopyButton.jsx";
import {
  CheckboxGroup,
  FormErrors,
  TextField,
  useForm,
} from "../../../components/forms.jsx";
import { PageHeader } from "../../../components/lists.jsx";
import { usePageTitle } from "../../../components/PageMeta.js";
import { fromLocalInput } from "../../../lib/format.js";
import { useCreateToken } from "../api/createToken.js";
import { SCOPES } from "../components/tokenState.js";

function CreatedToken({ created }) {
  return (
    <div className="card">
      <h2>Token created</h2>
      <p>
        <strong>Copy the token now:</strong> it is shown only this once. Nobody,
        not even an administrator, can read it again; if it is lost, revoke it
        and make a new one.
      </p>
      <p className="secret">
        <code data-testid="token-secret">{created.token}</code>
      </p>
      <div className="actions">
        <CopyButton text={created.token} />
        <Link className="button flat" to="/admin/tokens">
          Done
        </Link>
      </div>
    </div>
  );
}

export function TokenCreate() {
  usePageTitle("Create an API token");
  const create = useCreateToken();
  const [created, setCreated] = useState(null);
  const form = useForm({ name: "", scopes: ["files"], expires_at: "" });
  return (
    <>
      <PageHeader
        title="Create an API token"
        back={["/admin/tokens", "API Tokens"]}
      />
      {created ? (
        <CreatedToken created={created} />
      ) : (
        <form
          className="card narrow-form"
          onSubmit={form.submit(async (values) =>
            setCreated(
              await create({
                ...values,
                name: values.name.trim(),
                expires_at: fromLocalInput(values.expires_at),
              }),
            ),
          )}
        >
          <TextField
            form={form}
            name="name"
            label="Name (what will use it)"
            required
          />
          <CheckboxGroup
            form={form}
            name="scopes"
            label="Scopes"
            options={SCOPES}
          />
          <TextField
            form={form}
            name="expires_at"
            label="Expires"
            type="datetime-local"
            help="Empty: never."
          />
          <FormErrors form={form} />
          <div className="actions">
            <button type="submit" disabled={form.busy}>
              Create
            </button>
          </div>
        </form>
      )}
    </>
  );
}
