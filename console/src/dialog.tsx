// A modal confirmation on <dialog> (focus trapped by the browser, Esc closes). With `typeToConfirm`, the
// confirm button stays disabled until the user types that exact text.

import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";

export function ConfirmDialog(props: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  typeToConfirm?: string;
  onConfirm(): void | Promise<void>;
  onClose(): void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [typed, setTyped] = useState("");
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  const ok = !props.typeToConfirm || typed === props.typeToConfirm;
  return (
    <dialog ref={ref} aria-labelledby="dlg-title" onClose={props.onClose} onCancel={props.onClose}>
      <form
        method="dialog"
        onSubmit={async (e) => {
          e.preventDefault();
          if (!ok || busy) return;
          setBusy(true);
          try {
            await props.onConfirm();
          } finally {
            setBusy(false);
          }
          props.onClose();
        }}
      >
        <h2 id="dlg-title">{props.title}</h2>
        <div>{props.children}</div>
        {props.typeToConfirm ? (
          <div class="field">
            <label for="dlg-confirm">
              Type <strong>{props.typeToConfirm}</strong> to confirm
            </label>
            <input id="dlg-confirm" type="text" autoComplete="off" value={typed} onInput={(e) => setTyped((e.target as HTMLInputElement).value)} />
          </div>
        ) : null}
        <div class="actions">
          <button type="submit" class={props.danger ? "danger" : undefined} disabled={!ok || busy}>
            {props.confirmLabel}
          </button>
          <button type="button" class="secondary" onClick={props.onClose}>
            Cancel
          </button>
        </div>
      </form>
    </dialog>
  );
}
