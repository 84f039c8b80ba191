// Small line icons drawn inline (no icon font, nothing fetched).
const frame = {
  width: 18,
  height: 18,
  viewBox: "0 0 24 24",
  fill: "none",
  "aria-hidden": true,
  focusable: false,
};

export function FolderIcon() {
  return (
    <svg {...frame} className="icon folder">
      <path d="M3 6.5A1.5 1.5 0 0 1 4.5 5h4.4l2 2.2h8.6A1.5 1.5 0 0 1 21 8.7v9.8a1.5 1.5 0 0 1-1.5 1.5h-15A1.5 1.5 0 0 1 3 18.5z" />
    </svg>
  );
}

export function FileIcon() {
  return (
    <svg {...frame} className="icon file">
      <path d="M6.5 3h7.6L19 7.9v11.6a1.5 1.5 0 0 1-1.5 1.5h-11A1.5 1.5 0 0 1 5 19.5v-15A1.5 1.5 0 0 1 6.5 3z" />
      <path d="M13.5 3v5h5.5" />
    </svg>
  );
}
