import { useState } from "react";
import { useInformation } from "../api/getInformation.js";
import { ConnectDialog } from "./ConnectDialog.jsx";

/** The header's 'How do I connect?' chip: green with an assigned source, red without. */
export function ConnectChip() {
  const { data } = useInformation();
  const [open, setOpen] = useState(false);
  const hasSource = Boolean(data && data.source);
  return (
    <>
      <button
        className={`chip ${hasSource ? "green" : "red"}`}
        data-state={data ? (hasSource ? "source" : "no-source") : "loading"}
        onClick={() => setOpen(true)}
      >
        How do I connect?
      </button>
      {open ? (
        <ConnectDialog information={data} onClose={() => setOpen(false)} />
      ) : null}
    </>
  );
}
