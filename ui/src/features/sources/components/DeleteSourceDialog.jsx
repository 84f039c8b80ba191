import { Dialog } from "../../../components/Dialog.jsx";
import { FormErrors, RadioGroup, useForm } from "../../../components/forms.jsx";
import { useDeleteSource } from "../api/deleteSource.js";

export const NOT_DELETABLE =
  "A source that profiles or mailboxes use, or the organisation's default, cannot be deleted.";

/**
 * What may become of a local source's files when it is deleted: keep them (its folder
 * stays the organisation's) or remove the folder with them. The server shows a folder
 * inside the organisation's own one relative to it ("." for that folder itself) and
 * one elsewhere absolute: only a folder elsewhere is reserved for the organisation.
 */
export function fileChoices(source) {
  const path = (source.config && source.config.path) || "";
  const own = path === "." || path === "";
  const elsewhere = path.startsWith("/");
  const where = own ? "the organisation's own folder" : path;
  let keep = `They stay in ${where}, inside the organisation's own folder, which no other organisation can use.`;
  if (own) keep = "They stay in the organisation's own folder.";
  if (elsewhere)
    keep = `They stay in ${path}, and the folder stays reserved for this organisation: no other organisation can use it until the appliance's operator releases it.`;
  let remove = `The folder ${where} and everything in it are removed. This cannot be undone.`;
  let disabled = false;
  if (source.read_only) {
    remove = `${source.name} is read-only: the appliance does not remove its files.`;
    disabled = true;
  } else if (own) {
    remove =
      "This is the organisation's own folder: its files are not removed with a source.";
    disabled = true;
  }
  return [
    { value: "keep", label: "Keep the files", help: keep },
    {
      value: "delete",
      label: "Delete the folder and all its files",
      help: remove,
      disabled,
    },
  ];
}

/** Deleting a local source, saying what becomes of its files and letting the admin choose. */
export function DeleteSourceDialog({ source, onClose, onDeleted }) {
  const remove = useDeleteSource();
  const form = useForm({ files: "keep" });
  const deleting = form.values.files === "delete";
  const submit = form.submit(async ({ files }) => {
    await remove(source.id, files);
    onDeleted(files);
  });
  return (
    <Dialog
      title="Delete the source"
      onClose={form.busy ? undefined : onClose}
      actions={
        <>
          <button
            type="button"
            className="flat"
            onClick={onClose}
            disabled={form.busy}
          >
            Cancel
          </button>
          <button
            type="submit"
            form="delete-source"
            className="danger"
            disabled={form.busy}
          >
            {deleting ? "Delete the source and its files" : "Delete the source"}
          </button>
        </>
      }
    >
      <form id="delete-source" onSubmit={submit}>
        <p>
          Delete {source.name}? Its files are kept unless you choose to delete
          them. {NOT_DELETABLE}
        </p>
        <RadioGroup
          form={form}
          name="files"
          label="What becomes of the files"
          options={fileChoices(source)}
        />
        <FormErrors form={form} />
      </form>
    </Dialog>
  );
}
