import { createContext, useCallback, useContext, useState } from "react";

// Notifications (console-spec §9): bottom-right, 5000 ms by default (0 keeps one).
const NotifyContext = createContext(() => {});
export const POSITIONS = ["top-left", "top-right", "bottom-left", "bottom-right", "top", "bottom", "left", "right", "center"];

export function NotificationsProvider({ children }) {
  const [notes, setNotes] = useState([]);
  const notify = useCallback((message, { type = "info", timeout = 5000, position = "bottom-right" } = {}) => {
    const id = Math.random().toString(36).slice(2);
    setNotes((all) => [...all, { id, message: String(message), type, position }]);
    if (timeout > 0) setTimeout(() => setNotes((all) => all.filter((n) => n.id !== id)), timeout);
  }, []);
  return (
    <NotifyContext.Provider value={notify}>
      {children}
      {POSITIONS.map((position) => {
        const here = notes.filter((n) => n.position === position);
        return here.length ? (
          <div key={position} className={`notifications ${position}`} role="status" aria-live="polite">
            {here.map((n) => (
              <div key={n.id} className={`note ${n.type}`}>{n.message}</div>
            ))}
          </div>
        ) : null;
      })}
    </NotifyContext.Provider>
  );
}

export const useNotify = () => useContext(NotifyContext);

/** The message to show for an API error: its detail, or its field messages. */
export function errorText(error) {
  const data = error && error.data;
  if (data && data.detail) return data.detail;
  if (data && typeof data === "object") {
    const first = Object.entries(data).find(([, v]) => Array.isArray(v));
    if (first) return `${first[0]}: ${first[1].join(" ")}`;
  }
  return (error && error.message) || "Something went wrong.";
}
