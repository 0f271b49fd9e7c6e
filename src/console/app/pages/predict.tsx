/**
 * The predict playground: pick a config and a pattern, generate a request from the config's feature
 * schema (GET /api/v1/models/{id}/example) or paste one, send it to the HTTP/JSON form of Predict and
 * read each row's scores and error. Beside it: the same call as a `lattice predict` command and with
 * the package's TypeScript client.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { type Answer, ApiError, call, get, seg } from '../api';
import { ErrorBox, FOCUSABLE, fmt, SCROLLABLE } from '../components/ui';
import { useLoad } from '../hooks';
import { navigate } from '../router';
import type { ModelSummary, Session } from '../types';
import { encodeValue, FORM_TYPES, type FormType, valueText } from '../value-bytes';

const PATTERNS = [
  ['PointWise', 'pointwise', 'point'],
  ['PairWise', 'pairwise', 'pair'],
  ['SlateWise', 'slatewise', 'slate'],
] as const;
type Pattern = (typeof PATTERNS)[number][0];

interface Schema {
  name: string;
  dataType?: string;
  data_type?: string;
  vectorDim?: number;
}
interface Score {
  outputValues?: string[];
  output_values?: string[];
  error?: string;
}
type Json = Record<string, unknown>;

const field = <T,>(object: Json, camel: string, snake: string): T | undefined =>
  (object[camel] ?? object[snake]) as T | undefined;

async function configIds(): Promise<string[]> {
  try {
    return (await get<{ models: ModelSummary[] }>('/api/v1/models')).models.map((m) => m.model_config_id);
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
    return (await get<{ models: ModelSummary[] }>('/models')).models.map((m) => m.model_config_id);
  }
}

export function PredictPage({ initial }: { initial: string | undefined }) {
  const [ids, setIds] = useState<string[]>([]);
  const [listError, setListError] = useState<ApiError | undefined>(undefined);
  const [id, setId] = useState(initial ?? '');
  const [pattern, setPattern] = useState<Pattern>('PointWise');
  const [text, setText] = useState('');
  const [deadline, setDeadline] = useState('5000');
  // With auth on, the equivalent calls carry the caller's id and read its token from the environment.
  const session = useLoad((signal) => get<Session>('/api/v1/session', signal), []);
  const caller = session.data?.auth ? session.data.caller : undefined;
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [answer, setAnswer] = useState<Answer<Json> | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    configIds().then(
      (list) => {
        setIds(list);
        if (id === '' && list[0] !== undefined) setId(list[0]);
      },
      (err) => setListError(err as ApiError),
    );
  }, []);

  const generate = async () => {
    setError(undefined);
    const query = PATTERNS.find((p) => p[0] === pattern)![1];
    try {
      setText(JSON.stringify(await get(`/api/v1/models/${seg(id)}/example?pattern=${query}`), null, 2));
    } catch (err) {
      setError(err as ApiError);
    }
  };
  const sendIt = async () => {
    setError(undefined);
    setAnswer(undefined);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (err) {
      setError(new ApiError(0, 'INVALID_ARGUMENT', `the request is not JSON: ${(err as Error).message}`));
      return;
    }
    setBusy(true);
    try {
      setAnswer(
        await call<Json>(`/api/v1/rpc/orchestrator.v1.Predict/Infer${pattern}`, {
          body,
          // The orchestrator answers each component's timing in a header when asked (timings-trailer.ts).
          headers: { 'x-lattice-deadline-ms': deadline, 'x-lattice-timings': '1' },
        }),
      );
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };
  const request = useMemo(() => {
    try {
      return JSON.parse(text) as Json;
    } catch {
      return undefined;
    }
  }, [text]);

  return (
    <>
      <h1>Predict playground</h1>
      <ErrorBox error={listError} what="Could not list the configs" />
      <div class="form-row">
        <label for="config">Config</label>
        <select
          id="config"
          value={id}
          onChange={(e) => {
            const value = (e.target as HTMLSelectElement).value;
            setId(value);
            navigate('predict', value);
          }}
        >
          {ids.map((m) => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
        <fieldset class="inline">
          <legend>Pattern</legend>
          {PATTERNS.map(([name]) => (
            <label key={name}>
              <input
                type="radio"
                name="pattern"
                checked={pattern === name}
                onChange={() => setPattern(name)}
              />{' '}
              {name}
            </label>
          ))}
        </fieldset>
        <button type="button" onClick={() => void generate()} disabled={id === ''}>
          Generate a request
        </button>
      </div>
      <RequestForm
        id={id}
        pattern={pattern}
        onBuilt={(request) => setText(JSON.stringify(request, null, 2))}
      />
      <label for="request">Request (PredictRequest, proto3 JSON)</label>
      <textarea
        id="request"
        class="code"
        rows={12}
        spellcheck={false}
        value={text}
        placeholder='{"modelConfigId": "catalog_ranker", "contextFeatures": [...], "targets": [...]}'
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
      />
      <div class="form-row">
        <label for="deadline">Deadline (ms)</label>
        <input
          id="deadline"
          type="number"
          min="1"
          value={deadline}
          onInput={(e) => setDeadline((e.target as HTMLInputElement).value)}
        />
        <button
          type="button"
          class="primary"
          disabled={busy || text.trim() === ''}
          onClick={() => void sendIt()}
        >
          Send
        </button>
      </div>
      <ErrorBox error={error} what="The call failed" />
      {answer ? <Result answer={answer} pattern={pattern} request={request} /> : null}
      {request ? (
        <Equivalents request={request} pattern={pattern} deadline={deadline} caller={caller} />
      ) : null}
    </>
  );
}

interface ContextRow {
  name: string;
  type: FormType;
  value: string;
}

/**
 * The request from a form: context features with their types and the target ids (pairs of
 * neighbours, or one slate of all, for the other patterns). Targets' own features come from the
 * feature store, as the config's components look them up.
 */
function RequestForm({
  id,
  pattern,
  onBuilt,
}: {
  id: string;
  pattern: Pattern;
  onBuilt: (request: Json) => void;
}) {
  const [context, setContext] = useState<ContextRow[]>([{ name: 'user_id', type: 'STRING', value: 'u1' }]);
  const [targets, setTargets] = useState('c1, c2, c3');
  const build = (event: Event) => {
    event.preventDefault();
    const ids = targets
      .split(/[\s,]+/)
      .map((t) => t.trim())
      .filter((t) => t !== '');
    const request: Json = {
      modelConfigId: id,
      contextFeatures: context
        .filter((c) => c.name.trim() !== '')
        .map((c) => ({
          name: c.name.trim(),
          dataType: `DATA_TYPE_${c.type}`,
          value: encodeValue(c.type, c.value),
        })),
      targets: ids.map((t) => ({ id: t })),
    };
    if (pattern === 'PairWise') {
      request.pairs = ids.slice(1).map((_t, i) => ({ firstTargetIndex: i, secondTargetIndex: i + 1 }));
    } else if (pattern === 'SlateWise') {
      request.slates = [{ slateTargetIndices: ids.map((_t, i) => i) }];
    }
    onBuilt(request);
  };
  return (
    <details class="form-box">
      <summary>Fill a form instead</summary>
      <form onSubmit={build}>
        {context.map((row, i) => (
          <div class="form-row" key={i}>
            <label for={`ctx-name-${i}`}>Context feature</label>
            <input
              id={`ctx-name-${i}`}
              value={row.name}
              onInput={(e) =>
                setContext(
                  context.map((r, j) => (j === i ? { ...r, name: (e.target as HTMLInputElement).value } : r)),
                )
              }
            />
            <label for={`ctx-type-${i}`}>Type</label>
            <select
              id={`ctx-type-${i}`}
              value={row.type}
              onChange={(e) =>
                setContext(
                  context.map((r, j) =>
                    j === i ? { ...r, type: (e.target as HTMLSelectElement).value as FormType } : r,
                  ),
                )
              }
            >
              {FORM_TYPES.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
            <label for={`ctx-value-${i}`}>Value</label>
            <input
              id={`ctx-value-${i}`}
              value={row.value}
              onInput={(e) =>
                setContext(
                  context.map((r, j) =>
                    j === i ? { ...r, value: (e.target as HTMLInputElement).value } : r,
                  ),
                )
              }
            />
            <button type="button" onClick={() => setContext(context.filter((_r, j) => j !== i))}>
              Remove
            </button>
          </div>
        ))}
        <button
          type="button"
          onClick={() => setContext([...context, { name: '', type: 'STRING', value: '' }])}
        >
          Add a context feature
        </button>
        <div class="form-row">
          <label for="form-targets">Target ids</label>
          <input
            id="form-targets"
            value={targets}
            onInput={(e) => setTargets((e.target as HTMLInputElement).value)}
          />
        </div>
        <button type="submit">Write the request</button>
      </form>
    </details>
  );
}

function Result({
  answer,
  pattern,
  request,
}: {
  answer: Answer<Json>;
  pattern: Pattern;
  request: Json | undefined;
}) {
  const prefix = pattern === 'PointWise' ? 'target' : pattern === 'PairWise' ? 'pair' : 'slate';
  const schema = field<Schema[]>(answer.body, `${prefix}OutputSchema`, `${prefix}_output_schema`) ?? [];
  const scores = field<Score[]>(answer.body, `${prefix}Scores`, `${prefix}_scores`) ?? [];
  const rowName = (i: number): string => {
    if (request === undefined) return String(i);
    if (pattern === 'PointWise')
      return String((field<Json[]>(request, 'targets', 'targets')?.[i]?.id as string | undefined) ?? i);
    const rows = field<Json[]>(
      request,
      pattern === 'PairWise' ? 'pairs' : 'slates',
      pattern === 'PairWise' ? 'pairs' : 'slates',
    );
    const row = rows?.[i];
    if (row === undefined) return String(i);
    return pattern === 'PairWise'
      ? `${field<number>(row, 'firstTargetIndex', 'first_target_index') ?? 0}–${field<number>(row, 'secondTargetIndex', 'second_target_index') ?? 0}`
      : (field<number[]>(row, 'slateTargetIndices', 'slate_target_indices') ?? []).join('.');
  };
  const timing = answer.headers.get('x-lattice-timings');
  return (
    <section aria-labelledby="result-title">
      <h2 id="result-title">Scores</h2>
      <p class="muted">
        Answered in {fmt(answer.elapsedMs, 1)} ms (round trip from the browser)
        {field<string>(answer.body, 'trackingId', 'tracking_id')
          ? `, tracking id ${field<string>(answer.body, 'trackingId', 'tracking_id')}`
          : ''}
        .
      </p>
      <div {...SCROLLABLE}>
        <table class="scores">
          <thead>
            <tr>
              <th scope="col">Row</th>
              {schema.map((s) => (
                <th scope="col" key={s.name}>
                  {s.name}
                </th>
              ))}
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {scores.map((score, i) => (
              <tr key={i}>
                <th scope="row">{rowName(i)}</th>
                {schema.map((s, j) => {
                  const value = (score.outputValues ?? score.output_values ?? [])[j];
                  return (
                    <td key={s.name}>
                      {value === undefined ? '—' : valueText(s.dataType ?? s.data_type ?? 'FP32', value)}
                    </td>
                  );
                })}
                <td class={score.error ? 'bad-text' : ''}>{score.error || '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {timing ? <Timings header={timing} /> : null}
      <details>
        <summary>Raw answer</summary>
        <pre class="json" {...FOCUSABLE}>
          {JSON.stringify(answer.body, null, 2)}
        </pre>
      </details>
    </section>
  );
}

interface ComponentTiming {
  name: string;
  kind: string;
  start_ms: number;
  duration_ms: number;
  state: string;
}

/**
 * Per-component timings from the `X-Lattice-Timings` header (the orchestrator's JSON: the DAG's
 * components in order, each with its start, duration and state, and the total).
 */
function Timings({ header }: { header: string }) {
  let timings: { total_ms: number; components: ComponentTiming[]; omitted?: number };
  try {
    timings = JSON.parse(header);
  } catch {
    return null;
  }
  return (
    <div {...SCROLLABLE}>
      <table class="timings">
        <caption>
          Per component (total {fmt(timings.total_ms, 2)} ms
          {timings.omitted ? `, ${timings.omitted} more not listed` : ''})
        </caption>
        <thead>
          <tr>
            <th scope="col">Component</th>
            <th scope="col">Kind</th>
            <th scope="col">State</th>
            <th scope="col">Start ms</th>
            <th scope="col">Duration ms</th>
          </tr>
        </thead>
        <tbody>
          {timings.components.map((c) => (
            <tr key={c.name}>
              <th scope="row">{c.name}</th>
              <td>{c.kind}</td>
              <td class={c.state === 'failed' ? 'bad-text' : ''}>{c.state}</td>
              <td>{fmt(c.start_ms, 2)}</td>
              <td>{fmt(c.duration_ms, 2)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const shellQuote = (s: string): string => (/^[\w.,:=@/+-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`);

/** The same call from a terminal and from TypeScript. */
function Equivalents({
  request,
  pattern,
  deadline,
  caller,
}: {
  request: Json;
  pattern: Pattern;
  deadline: string;
  /** The signed-in caller, when auth is on: its token is never shown; both calls read LATTICE_CALLER_TOKEN. */
  caller: string | undefined;
}) {
  const kind = PATTERNS.find((p) => p[0] === pattern)![2];
  const id = field<string>(request, 'modelConfigId', 'model_config_id') ?? '';
  const context = (field<Json[]>(request, 'contextFeatures', 'context_features') ?? []).map((f) => {
    const type = (field<string>(f, 'dataType', 'data_type') ?? 'STRING').replace(/^DATA_TYPE_/, '');
    return { name: String(f.name), type, value: valueText(type, String(f.value ?? '')) };
  });
  const targets = (field<Json[]>(request, 'targets', 'targets') ?? []).map((t) => String(t.id));
  const pairs = (field<Json[]>(request, 'pairs', 'pairs') ?? []).map(
    (p) =>
      `${field<number>(p, 'firstTargetIndex', 'first_target_index') ?? 0}-${field<number>(p, 'secondTargetIndex', 'second_target_index') ?? 0}`,
  );
  const slates = (field<Json[]>(request, 'slates', 'slates') ?? []).map((s) =>
    (field<number[]>(s, 'slateTargetIndices', 'slate_target_indices') ?? []).join('.'),
  );
  const cli = [
    'npx lattice predict',
    `--model-config ${shellQuote(id)}`,
    ...(kind === 'point' ? [] : [`--kind ${kind}`]),
    ...context.map((c) => `--context ${shellQuote(`${c.name}=${c.value}`)}`),
    ...context.filter((c) => c.type !== 'STRING').map((c) => `--schema ${c.name}=${c.type}`),
    ...targets.map((t) => `--target-id ${shellQuote(t)}`),
    ...(pairs.length ? [`--pairs ${pairs.join(',')}`] : []),
    ...(slates.length ? [`--slates ${slates.join(',')}`] : []),
    ...(deadline === '5000' ? [] : [`--deadline-ms ${deadline}`]),
    // lattice predict reads the caller's token from LATTICE_CALLER_TOKEN.
    ...(caller === undefined ? [] : [`--caller-id ${shellQuote(caller)}`]),
  ].join(' \\\n  ');
  const method = kind === 'point' ? 'pointWise' : kind === 'pair' ? 'pairWise' : 'slateWise';
  const contextObject = Object.fromEntries(
    context.map((c) => [c.name, c.type === 'STRING' ? c.value : JSON.parse(c.value)]),
  );
  const ts = [
    "import { OrchestratorClient } from 'lattice/client';",
    caller === undefined
      ? "const client = new OrchestratorClient('127.0.0.1:50051');"
      : `const client = new OrchestratorClient('127.0.0.1:50051', { callerId: ${JSON.stringify(caller)}, callerToken: process.env.LATTICE_CALLER_TOKEN });`,
    `const answer = await client.${method}({`,
    `  modelConfigId: ${JSON.stringify(id)},`,
    `  context: ${JSON.stringify(contextObject)},`,
    `  targets: ${JSON.stringify(targets.map((t) => ({ id: t })))},`,
    ...(pairs.length
      ? [
          `  pairs: ${JSON.stringify(pairs.map((p) => p.split('-').map(Number)).map(([first, second]) => ({ first, second })))},`,
        ]
      : []),
    ...(slates.length
      ? [`  slates: ${JSON.stringify(slates.map((s) => ({ targets: s.split('.').map(Number) })))},`]
      : []),
    ...(deadline === '1000' ? [] : [`  deadlineMs: ${Number(deadline)},`]),
    '});',
    'console.log(answer);',
  ].join('\n');
  return (
    <section aria-labelledby="equivalents-title">
      <h2 id="equivalents-title">The same call elsewhere</h2>
      <h3>lattice predict</h3>
      <pre class="code" {...FOCUSABLE} data-testid="cli">
        {cli}
      </pre>
      <h3>TypeScript</h3>
      <pre class="code" {...FOCUSABLE}>
        {ts}
      </pre>
    </section>
  );
}
