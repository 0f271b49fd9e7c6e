/** Small pieces every page uses: errors, state badges, confirmations, timestamps. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import type { ApiError } from '../api';

/** An API's error as the server said it, with what the page could not do. */
export function ErrorBox({ error, what }: { error: ApiError | undefined; what?: string }) {
  if (error === undefined) return null;
  const missing = error.status === 404 && error.code === 'NOT_FOUND' && /^no route /.test(error.message);
  return (
    <div class="error" role="alert">
      <strong>{what ?? 'The call failed'}:</strong> {error.code}
      {error.status > 0 ? ` (HTTP ${error.status})` : ''} — {error.message}
      {error.field ? <span class="field"> (field {error.field})</span> : null}
      {missing ? (
        <p class="hint">This server does not offer that API (its part may not run in this process).</p>
      ) : null}
    </div>
  );
}

const STATE_CLASS: Record<string, string> = {
  live: 'ok',
  READY: 'ok',
  SUCCEEDED: 'ok',
  SERVING: 'ok',
  DONE: 'ok',
  rejected: 'bad',
  invalid: 'bad',
  FAILED: 'bad',
  removed: 'muted',
  RETIRED: 'muted',
};

export function StateBadge({ state }: { state: string | null | undefined }) {
  const text = state ?? 'unknown';
  return <span class={`badge ${STATE_CLASS[text] ?? 'busy'}`}>{text}</span>;
}

export function When({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">—</span>;
  const date = new Date(at);
  return (
    <time dateTime={at} title={at}>
      {date.toLocaleString()}
    </time>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" aria-live="polite">
      Loading {what}…
    </p>
  );
}

/**
 * A modal that asks before an action that changes serving (reset, promote, rollback, apply):
 * the dialog element traps focus and Escape cancels it.
 */
export function Confirm({
  title,
  children,
  confirmLabel,
  onConfirm,
  onCancel,
}: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  return (
    <dialog ref={dialog} class="confirm" aria-labelledby="confirm-title" onCancel={onCancel}>
      <h2 id="confirm-title">{title}</h2>
      <div>{children}</div>
      <div class="actions">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="button" class="primary" onClick={onConfirm}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

export function Json({ value }: { value: unknown }) {
  return (
    <pre class="json" {...FOCUSABLE}>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}

export const fmt = (n: number | null | undefined, digits = 2): string =>
  n === null || n === undefined || Number.isNaN(n) ? '—' : n.toFixed(digits);

/**
 * The attributes of a wide table's scrolling box: axe-core requires a scrollable region to take focus
 * (a keyboard user scrolls it with the arrow keys once focused), which a plain div does not.
 */
export const SCROLLABLE = { class: 'table-scroll', tabIndex: 0 } as const;

/** The same for a block of code or JSON, which scrolls when its lines are longer than the screen. */
export const FOCUSABLE = { tabIndex: 0 } as const;
