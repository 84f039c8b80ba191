import { useNotify } from "./notifications.jsx";

/** Copies text: the Clipboard API where the page may use it, else a selected textarea. */
export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  const copied = document.execCommand("copy");
  area.remove();
  if (!copied) throw new Error("The browser did not allow copying.");
}

export function CopyButton({ text, label = "Copy", className = "" }) {
  const notify = useNotify();
  return (
    <button
      type="button"
      className={className}
      onClick={() =>
        copyText(text).then(
          () => notify("Copied to the clipboard", { type: "positive" }),
          (e) => notify(`Could not copy: ${e.message}`, { type: "warning" }),
        )
      }
    >
      {label}
    </button>
  );
}
