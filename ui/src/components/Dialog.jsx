import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useId,
  useRef,
  useState,
} from "react";

/** A modal dialog: focus moves into it, Escape and the backdrop close it. */
export function Dialog({ title, children, actions, onClose, wide = false }) {
  const titleId = useId();
  const box = useRef(null);
  useEffect(() => {
    const previous = document.activeElement;
    const first =
      box.current &&
      box.current.querySelector("input, select, textarea, button, a[href]");
    if (first) first.focus();
    return () => {
      if (previous && previous.focus) previous.focus();
    };
  }, []);
  useEffect(() => {
    const onKey = (event) => {
      if (event.key === "Escape" && onClose) onClose();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [onClose]);
  return (
    <div
      className="dialog-backdrop"
      onMouseDown={(e) => e.target === e.currentTarget && onClose && onClose()}
    >
      <div
        ref={box}
        className={`dialog ${wide ? "wide" : ""}`}
        role="dialog"
        aria-modal="true"
        aria-labelledby={titleId}
      >
        <h2 id={titleId}>{title}</h2>
        {children}
        {actions ? <div className="actions">{actions}</div> : null}
      </div>
    </div>
  );
}

export function ConfirmDialog({
  title,
  message,
  confirm = "Delete",
  danger = true,
  onConfirm,
  onCancel,
}) {
  return (
    <Dialog
      title={title}
      onClose={onCancel}
      actions={
        <>
          <button className="flat" onClick={onCancel}>
            Cancel
          </button>
          <button className={danger ? "danger" : ""} onClick={onConfirm}>
            {confirm}
          </button>
        </>
      }
    >
      <p>{message}</p>
    </Dialog>
  );
}

const ConfirmContext = createContext(() => Promise.resolve(false));

/** Hosts the one confirm dialog; `useConfirm()` asks it and resolves to true or false. */
export function ConfirmProvider({ children }) {
  const [question, setQuestion] = useState(null);
  const ask = useCallback(
    (options) =>
      new Promise((resolve) => {
        setQuestion({ ...options, resolve });
      }),
    [],
  );
  const answer = (value) => {
    question.resolve(value);
    setQuestion(null);
  };
  return (
    <ConfirmContext.Provider value={ask}>
      {children}
      {question ? (
        <ConfirmDialog
          title={question.title}
          message={question.message}
          confirm={question.confirm}
          danger={question.danger !== false}
          onConfirm={() => answer(true)}
          onCancel={() => answer(false)}
        />
      ) : null}
    </ConfirmContext.Provider>
  );
}

/** confirm({title, message, confirm}) → Promise<boolean> */
export const useConfirm = () => useContext(ConfirmContext);
