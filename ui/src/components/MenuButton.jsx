import { useEffect, useId, useLayoutEffect, useState } from "react";

/**
 * A button that opens a menu (the WAI-ARIA menu button pattern): Enter, Space
 * or ArrowDown open it on its first item, ArrowUp on its last; in the menu the
 * arrow keys, Home and End move, Escape closes it and gives focus back to the
 * button, Tab closes it; a click outside closes it. `items` is a function of
 * `close` returning the menu's elements, each with role="menuitem".
 * `floating`: the menu is positioned against the viewport, so a scrolling
 * container (a table's) cannot clip it.
 */
export function MenuButton({
  label,
  ariaLabel,
  className = "flat",
  boxClassName = "",
  menuClassName = "menu",
  floating = false,
  items,
}) {
  const [open, setOpen] = useState(null); // null, "first" or "last": where focus starts
  const [place, setPlace] = useState(null);
  // found by id, not by ref: `close` is handed to the items while they render
  const id = useId();
  const menuId = `${id}-menu`;
  const buttonId = `${id}-button`;
  const boxId = `${id}-box`;
  const element = (which) => document.getElementById(which);

  const entries = () => {
    const menu = element(menuId);
    return menu
      ? [...menu.querySelectorAll('[role="menuitem"]')].filter(
          (el) => !el.disabled,
        )
      : [];
  };
  const close = (refocus = true) => {
    setOpen(null);
    const button = element(buttonId);
    if (refocus && button) button.focus();
  };

  const show = (start) => {
    const button = element(buttonId);
    if (floating && button) {
      const rect = button.getBoundingClientRect();
      setPlace({
        top: rect.bottom + 4,
        right: Math.max(8, window.innerWidth - rect.right),
      });
    }
    setOpen(start);
  };

  useLayoutEffect(() => {
    if (!open) return;
    const menu = document.getElementById(menuId);
    const list = menu
      ? [...menu.querySelectorAll('[role="menuitem"]')].filter(
          (el) => !el.disabled,
        )
      : [];
    const target = open === "last" ? list[list.length - 1] : list[0];
    if (target) target.focus();
  }, [open, menuId]);

  useEffect(() => {
    if (!open) return undefined;
    const outside = (event) => {
      const box = document.getElementById(boxId);
      if (box && !box.contains(event.target)) setOpen(null);
    };
    const away = () => setOpen(null); // a floating menu does not follow a scroll
    document.addEventListener("mousedown", outside);
    if (floating) {
      window.addEventListener("resize", away);
      window.addEventListener("scroll", away, true);
    }
    return () => {
      document.removeEventListener("mousedown", outside);
      window.removeEventListener("resize", away);
      window.removeEventListener("scroll", away, true);
    };
  }, [open, floating, boxId]);

  function onButtonKey(event) {
    if (event.key === "ArrowDown") {
      event.preventDefault();
      show("first");
    } else if (event.key === "ArrowUp") {
      event.preventDefault();
      show("last");
    }
  }
  function onMenuKey(event) {
    const list = entries();
    const at = list.indexOf(document.activeElement);
    const move = (i) => {
      event.preventDefault();
      if (list.length) list[(i + list.length) % list.length].focus();
    };
    if (event.key === "ArrowDown") move(at + 1);
    else if (event.key === "ArrowUp") move(at - 1);
    else if (event.key === "Home") move(0);
    else if (event.key === "End") move(list.length - 1);
    else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      close();
    } else if (event.key === "Tab") close(false);
  }

  return (
    <div id={boxId} className={`menu-button ${boxClassName}`}>
      <button
        id={buttonId}
        type="button"
        className={className}
        aria-haspopup="menu"
        aria-expanded={Boolean(open)}
        aria-controls={open ? menuId : undefined}
        aria-label={ariaLabel}
        onClick={() => (open ? close(false) : show("first"))}
        onKeyDown={onButtonKey}
      >
        {label}
      </button>
      {open ? (
        <div
          id={menuId}
          role="menu"
          aria-label={ariaLabel || undefined}
          className={`${menuClassName} ${floating ? "floating" : ""}`}
          style={floating && place ? place : undefined}
          onKeyDown={onMenuKey}
        >
          {items(close)}
        </div>
      ) : null}
    </div>
  );
}
