import { useCallback, useEffect, useRef, useState } from "react";

/**
 * The width of an element, re-read on window resize after `delay` ms without
 * resizing (console-spec §2: the chart redraws with a 150 ms debounce).
 * Returns [ref callback for the element, width].
 */
export function useDebouncedWidth(delay = 150) {
  const element = useRef(null);
  const [width, setWidth] = useState(0);
  const ref = useCallback((node) => {
    element.current = node;
    if (node) setWidth(node.clientWidth);
  }, []);
  useEffect(() => {
    let timer;
    const onResize = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        if (element.current) setWidth(element.current.clientWidth);
      }, delay);
    };
    window.addEventListener("resize", onResize);
    return () => {
      clearTimeout(timer);
      window.removeEventListener("resize", onResize);
    };
  }, [delay]);
  return [ref, width];
}
