export function Dialog({ title, children, actions, onClose }) {
  return (
    <div className="dialog-backdrop" onClick={onClose}>
      <div className="dialog" role="dialog" aria-modal="true" aria-label={title} onClick={(e) => e.stopPropagation()}>
        <h2>{title}</h2>
        {children}
        <div className="actions">{actions}</div>
      </div>
    </div>
  );
}

export function ConfirmDialog({ title, message, confirm = "Delete", onConfirm, onCancel }) {
  return (
    <Dialog
      title={title}
      onClose={onCancel}
      actions={
        <>
          <button className="flat" onClick={onCancel}>Cancel</button>
          <button className="danger" onClick={onConfirm}>{confirm}</button>
        </>
      }
    >
      <p>{message}</p>
    </Dialog>
  );
}
