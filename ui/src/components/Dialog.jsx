import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useId,
  useRef,
  useState,
} from "react";

const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

/** What Tab can reach inside `box`, in order (visible ones only). */
export function focusables(box) {
  return [...box.querySelectorAll(FOCUSABLE)].filter(
    (el) => el.getClientRects().length > 0 && !el.closest("[inert]"),
  );
}

/**
 * A modal dialog: focus moves into it and stays there (Tab and Shift+Tab wrap),
 * Escape and the backdrop close it, and closing gives focus back to what opened it.
 */
export function Dialog({ title, children, actions, onClose, wide = false }) {
  const titleId = useId();
  const box = useRef(null);
  const close = useRef(onClose);
  useEffect(() => {
    close.current = onClose;
  }, [onClose]);
  useEffect(() => {
    const opener = document.activeElement;
    const first = box.current && focusables(box.current)[0];
    (first || box.current).focus();
    return () => {
      // back to the opener, if it is still on the page (a row's menu item is not)
      if (opener && opener.isConnected && opener.focus) opener.focus();
    };
  }, []);
  useEffect(() => {
    const onKey = (event) => {
      if (event.key === "Escape" && close.current) {
        event.stopPropagation();
        close.current();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);
  function trap(event) {
    if (event.key !== "Tab") return;
    const items = focusables(box.current);
    if (items.length === 0) {
      event.preventDefault();
      box.current.focus();
      return;
    }
    const first = items[0];
    const last = items[items.length - 1];
    const inside = box.current.contains(document.activeElement);
    if (event.shiftKey && (document.activeElement === first || !inside)) {
      event.preventDefault();
      last.focus();
    } else if (
      !event.shiftKey &&
      (document.activeElement === last || !inside)
    ) {
      event.preventDefault();
      first.focus();
    }
  }
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
        tabIndex={-1}
        onKeyDown={trap}
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
