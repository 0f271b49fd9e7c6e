/**
 * Change a config with review: the document in an editor, checked as you type by the orchestrator's
 * own validator (POST /api/v1/models/validate) with each problem at its JSON path (a click selects it
 * in the text), a diff against what serves now, and apply with a comment. Opened without an id it
 * makes a new config, or a clone of `?from=<id>`.
 */
import { structuredPatch } from 'diff';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { type ApiError, get, seg, send } from '../api';
import { ErrorBox, FOCUSABLE, Loading } from '../components/ui';
import { rangeOf, syntaxErrors } from '../json-path';
import { currentRoute, href, navigate } from '../router';
import type { ModelDetail, Problem, Revision, Validation } from '../types';

const pretty = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

export function Editor({ id }: { id: string | undefined }) {
  const from = id ?? currentRoute().query.get('from') ?? undefined;
  const [base, setBase] = useState<
    { detail: ModelDetail | undefined; revision: number | undefined } | undefined
  >(from === undefined ? { detail: undefined, revision: undefined } : undefined);
  const [loadError, setLoadError] = useState<ApiError | undefined>(undefined);
  const [text, setText] = useState(from === undefined ? pretty({ model_config_id: '' }) : '');
  const [newId, setNewId] = useState(from === undefined ? '' : `${from}_copy`);
  useEffect(() => {
    if (from === undefined) return;
    Promise.all([
      get<ModelDetail>(`/api/v1/models/${seg(from)}`),
      get<{ revisions: Revision[] }>(`/api/v1/models/${seg(from)}/revisions`).catch(() => ({
        revisions: [],
      })),
    ]).then(
      ([detail, { revisions }]) => {
        setBase({ detail, revision: detail.revision ?? revisions[0]?.revision });
        setText(pretty(detail.document));
      },
      (err) => setLoadError(err as ApiError),
    );
  }, [from]);

  if (loadError) return <ErrorBox error={loadError} what={`Could not read ${from}`} />;
  if (base === undefined) return <Loading what="the config" />;
  return (
    <EditorForm
      id={id}
      from={from}
      base={base}
      text={text}
      setText={setText}
      newId={newId}
      setNewId={setNewId}
    />
  );
}

function EditorForm({
  id,
  from,
  base,
  text,
  setText,
  newId,
  setNewId,
}: {
  id: string | undefined;
  from: string | undefined;
  base: { detail: ModelDetail | undefined; revision: number | undefined };
  text: string;
  setText: (t: string) => void;
  newId: string;
  setNewId: (t: string) => void;
}) {
  const area = useRef<HTMLTextAreaElement>(null);
  const [problems, setProblems] = useState<Problem[]>([]);
  const [checked, setChecked] = useState<'checking' | 'valid' | 'invalid' | 'unavailable'>('checking');
  const [validateError, setValidateError] = useState<ApiError | undefined>(undefined);
  const [comment, setComment] = useState('');
  const [applyError, setApplyError] = useState<ApiError | undefined>(undefined);
  const [applied, setApplied] = useState<string | undefined>(undefined);
  const syntax = useMemo(() => syntaxErrors(text), [text]);
  const targetId = id ?? newId;

  // Validation as you type: the server's validator once the text parses, 300 ms after the last key.
  useEffect(() => {
    if (syntax.length > 0) {
      setChecked('invalid');
      setProblems([]);
      return;
    }
    setChecked('checking');
    const timer = setTimeout(async () => {
      try {
        let document = JSON.parse(text) as Record<string, unknown>;
        if (id === undefined && typeof document === 'object' && document !== null && newId !== '') {
          document = { ...document, model_config_id: newId };
        }
        const answer = await send<Validation>('POST', '/api/v1/models/validate', { document });
        setValidateError(undefined);
        setProblems(answer.problems);
        setChecked(answer.valid ? 'valid' : 'invalid');
      } catch (err) {
        setValidateError(err as ApiError);
        setChecked('unavailable');
      }
    }, 300);
    return () => clearTimeout(timer);
  }, [text, syntax.length, newId, id]);

  const select = (offset: number, length: number) => {
    const el = area.current;
    if (el === null) return;
    el.focus();
    el.setSelectionRange(offset, offset + length);
    // Scroll the selection into view: the line's share of the text's height.
    const line = text.slice(0, offset).split('\n').length;
    el.scrollTop = Math.max(0, (line - 3) * (el.scrollHeight / text.split('\n').length));
  };

  const live = base.detail?.live_document ?? base.detail?.document;
  // Hunks with three lines of context, as `git diff` shows them: a long document's one change stays visible.
  const hunks = useMemo(
    () =>
      live === undefined
        ? []
        : structuredPatch('live', 'edited', pretty(live), text.endsWith('\n') ? text : `${text}\n`, '', '', {
            context: 3,
          }).hunks,
    [live, text],
  );
  const changed = hunks.length > 0;

  const apply = async () => {
    setApplyError(undefined);
    try {
      let document = JSON.parse(text) as Record<string, unknown>;
      let answer: { revision: number; version?: string };
      if (id === undefined) {
        document = { ...document, model_config_id: newId };
        answer =
          from !== undefined && !changed
            ? await send('POST', `/api/v1/models/${seg(from)}/clone`, { new_id: newId, comment })
            : await send('PUT', `/api/v1/models/${seg(newId)}`, { document, comment });
      } else {
        answer = await send('PUT', `/api/v1/models/${seg(id)}`, {
          document,
          comment,
          ...(base.revision === undefined ? {} : { expected_revision: base.revision }),
        });
      }
      setApplied(`Applied as revision ${answer.revision}.`);
      navigate('models', targetId);
    } catch (err) {
      const error = err as ApiError;
      const body = error.body as { problems?: Problem[]; error?: { problems?: Problem[] } } | undefined;
      const returned = body?.problems ?? body?.error?.problems;
      if (returned) setProblems(returned);
      setApplyError(error);
    }
  };

  return (
    <>
      <div class="heading">
        <h1>
          {id === undefined ? (from === undefined ? 'New model config' : `Clone ${from}`) : `Edit ${id}`}
        </h1>
        {id === undefined ? null : (
          <a class="button" href={href('models', id)}>
            Back to {id}
          </a>
        )}
      </div>
      {id === undefined ? (
        <p>
          <label for="new-id">New config id</label>{' '}
          <input id="new-id" value={newId} onInput={(e) => setNewId((e.target as HTMLInputElement).value)} />
        </p>
      ) : null}
      <div class="editor">
        <div class="editor-text">
          <label for="document">Document (JSON)</label>
          <textarea
            id="document"
            ref={area}
            spellcheck={false}
            value={text}
            onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
            aria-describedby="problems"
            aria-invalid={checked === 'invalid'}
          />
        </div>
        <div class="editor-side">
          <section id="problems" aria-live="polite" aria-labelledby="problems-title">
            <h2 id="problems-title">
              Validation{' '}
              <span class={`badge ${checked === 'valid' ? 'ok' : checked === 'invalid' ? 'bad' : 'busy'}`}>
                {checked}
              </span>
            </h2>
            <ErrorBox error={validateError} what="The validator did not answer" />
            <ul class="problems">
              {syntax.map((e) => (
                <li key={`s${e.offset}`}>
                  <button type="button" class="link" onClick={() => select(e.offset, 1)}>
                    line {e.line}, column {e.column}
                  </button>
                  : {e.message}
                </li>
              ))}
              {problems.map((p) => {
                const range = rangeOf(text, p.path);
                return (
                  <li key={`${p.path}:${p.message}`} class="problem">
                    {range ? (
                      <button
                        type="button"
                        class="link path"
                        onClick={() => select(range.offset, range.length)}
                      >
                        {p.path || '(document)'}
                      </button>
                    ) : (
                      <code class="path">{p.path || '(document)'}</code>
                    )}
                    : {p.message}
                  </li>
                );
              })}
            </ul>
          </section>
          <section aria-labelledby="diff-title">
            <h2 id="diff-title">Diff against the live revision</h2>
            {live === undefined ? (
              <p class="muted">No live revision: this is a new config.</p>
            ) : !changed ? (
              <p class="muted">No changes.</p>
            ) : (
              <pre class="diff" {...FOCUSABLE}>
                {hunks.map((hunk) => (
                  <span key={`${hunk.oldStart}:${hunk.newStart}`}>
                    <span class="hunk">{`@@ live line ${hunk.oldStart}, edited line ${hunk.newStart} @@`}</span>
                    {hunk.lines.map((line, i) => (
                      <span
                        key={i}
                        class={line.startsWith('+') ? 'added' : line.startsWith('-') ? 'removed' : 'same'}
                      >
                        {line}
                      </span>
                    ))}
                  </span>
                ))}
              </pre>
            )}
          </section>
          <section aria-labelledby="apply-title">
            <h2 id="apply-title">Apply</h2>
            <label for="comment">Why (comment, recorded with your name)</label>
            <input
              id="comment"
              value={comment}
              onInput={(e) => setComment((e.target as HTMLInputElement).value)}
            />
            <button
              type="button"
              class="primary"
              disabled={
                checked !== 'valid' ||
                comment.trim() === '' ||
                targetId === '' ||
                (id !== undefined && !changed)
              }
              onClick={() => void apply()}
            >
              {id === undefined ? 'Create' : 'Apply'}
            </button>
            <ErrorBox error={applyError} what="Not applied" />
            {applied ? <p role="status">{applied}</p> : null}
          </section>
        </div>
      </div>
    </>
  );
}
