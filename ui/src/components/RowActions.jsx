import { Link } from "react-router";
import { MenuButton } from "./MenuButton.jsx";

/**
 * What a list's row offers, as the file viewer does: a button (or link) per action
 * on wide screens and one "Actions" menu on phones, where they would push the row
 * off the screen (CSS picks one); `menuOnly`: the menu at every width. `name` says
 * whose actions they are ("Actions for Globex"). Each action is {label, onSelect}
 * or {label, to}, with `ariaLabel` (the button's name on wide screens), `danger`,
 * `disabled` and `title` (the reason it is disabled) where they apply, and `key`
 * where the label changes (a "Measuring…" that was "Measure storage").
 */
export function RowActions({ name, actions, menuOnly = false }) {
  const shown = actions.filter(Boolean);
  if (!shown.length) return null;
  return (
    <>
      {menuOnly ? null : (
        <div className="row-actions inline-actions">
          {shown.map((action) =>
            action.to ? (
              <Link
                key={action.key || action.label}
                to={action.to}
                className="button flat small"
                aria-label={action.ariaLabel}
              >
                {action.label}
              </Link>
            ) : (
              <button
                key={action.key || action.label}
                type="button"
                className={`flat small ${action.danger ? "danger-text" : ""}`}
                aria-label={action.ariaLabel}
                disabled={Boolean(action.disabled)}
                title={action.title || undefined}
                onClick={action.onSelect}
              >
                {action.label}
              </button>
            ),
          )}
        </div>
      )}
      <MenuButton
        boxClassName={menuOnly ? "" : "menu-actions"}
        className="flat small"
        label="Actions"
        ariaLabel={`Actions for ${name}`}
        floating
        items={(close) =>
          shown.map((action) =>
            action.to ? (
              <Link
                key={action.key || action.label}
                role="menuitem"
                tabIndex={-1}
                to={action.to}
                onClick={() => close(false)}
              >
                {action.label}
              </Link>
            ) : (
              <button
                key={action.key || action.label}
                type="button"
                role="menuitem"
                tabIndex={-1}
                className={`flat ${action.danger ? "danger-text" : ""}`}
                disabled={Boolean(action.disabled)}
                title={action.title || undefined}
                onClick={() => {
                  close(); // focus back on the Actions button: a dialog gives it back there
                  action.onSelect();
                }}
              >
                {action.label}
              </button>
            ),
          )
        }
      />
    </>
  );
}
