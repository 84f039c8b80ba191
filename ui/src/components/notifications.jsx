import {
  createContext,
  useCallback,
  useContext,
  useMemo,
  useRef,
  useState,
} from "react";
import { fieldMessage } from "../lib/fieldLabels.js";

// Notifications (console-spec §9): bottom-right and 5000 ms by default; 0 keeps one until closed.
export const POSITIONS = [
  "top-left",
  "top-right",
  "bottom-left",
  "bottom-right",
  "top",
  "bottom",
  "left",
  "right",
  "center",
];
export const TYPES = ["positive", "negative", "warning", "info", "ongoing"];
export const DEFAULTS = {
  type: "info",
  timeout: 5000,
  position: "bottom-right",
};

const NotifyContext = createContext(() => () => {});

export function NotificationsProvider({ children }) {
  const [notes, setNotes] = useState([]);
  const counter = useRef(0);
  const dismiss = useCallback(
    (id) => setNotes((all) => all.filter((n) => n.id !== id)),
    [],
  );
  /** Show a message; returns a function that closes it (for ongoing ones). */
  const notify = useCallback(
    (message, options = {}) => {
      const { type, timeout, position } = { ...DEFAULTS, ...options };
      counter.current += 1;
      const id = counter.current;
      const note = {
        id,
        message: String(message),
        type: TYPES.includes(type) ? type : DEFAULTS.type,
        position: POSITIONS.includes(position) ? position : DEFAULTS.position,
        persistent: !(timeout > 0),
      };
      setNotes((all) => [...all, note]);
      if (timeout > 0) setTimeout(() => dismiss(id), timeout);
      return () => dismiss(id);
    },
    [dismiss],
  );
  const groups = useMemo(
    () =>
      POSITIONS.map((position) => [
        position,
        notes.filter((n) => n.position === position),
      ]),
    [notes],
  );
  return (
    <NotifyContext.Provider value={notify}>
      {children}
      {groups.map(([position, here]) =>
        here.length ? (
          <div
            key={position}
            className={`notifications ${position}`}
            role="status"
            aria-live="polite"
          >
            {here.map((note) => (
              <div
                key={note.id}
                className={`note ${note.type}`}
                data-testid="notification"
              >
                {note.type === "ongoing" ? (
                  <span className="spinner" aria-hidden="true" />
                ) : null}
                <span className="note-text">{note.message}</span>
                {note.persistent ? (
                  <button
                    className="note-close"
                    aria-label="Close"
                    onClick={() => dismiss(note.id)}
                  >
                    ×
                  </button>
                ) : null}
              </div>
            ))}
          </div>
        ) : null,
      )}
    </NotifyContext.Provider>
  );
}

/** notify(message, {type, timeout, position}) */
export const useNotify = () => useContext(NotifyContext);

/**
 * notify for a screen's attempts (save, invite, delete...): each note closes the one
 * this screen showed before, so a failed attempt's red note is not left beside the
 * success of the next.
 */
export function useAttemptNotify() {
  const notify = useNotify();
  const last = useRef(null);
  return useCallback(
    (message, options) => {
      if (last.current) last.current();
      last.current = notify(message, options);
      return last.current;
    },
    [notify],
  );
}

/**
 * The message to show for an API error: its detail, or its first field's messages
 * under the field's label (`labels`: the form's own, by field name), never the
 * field's API name.
 */
export function errorText(error, labels) {
  const data = error && error.data;
  if (data && typeof data.detail === "string") return data.detail;
  if (data && typeof data === "object") {
    const first = Object.entries(data).find(
      ([, v]) => Array.isArray(v) && v.length,
    );
    if (first) return fieldMessage(first[0], first[1], labels);
  }
  return (error && error.message) || "Something went wrong.";
}

/** A failed load's error, said in plain words where the content would be. */
export function LoadError({ error }) {
  if (!error) return null;
  return (
    <p className="error" role="alert">
      {errorText(error)}
    </p>
  );
}
