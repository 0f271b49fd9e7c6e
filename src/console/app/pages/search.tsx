/**
 * The search playground: a variant (chosen from the admin API's models where this process runs admin,
 * typed otherwise), a candidate id or a pasted vector, filters on the variant's attributes, and pages
 * through the answer with its next page token, via the HTTP/JSON form of vss.v1.SimilaritySearch.
 */
import { useEffect, useState } from 'preact/hooks';
import { type Answer, ApiError, call, get } from '../api';
import { ErrorBox, fmt, SCROLLABLE } from '../components/ui';
import { FILTER_OPS, type FilterOp } from '../filter-ops';
import type { VssModel } from '../types';
import { ADMIN } from './vss';

const SEARCH = '/api/v1/rpc/vss.v1.SimilaritySearch/Search';

interface FilterRow {
  field: string;
  op: FilterOp;
  values: string;
}
interface Candidate {
  id: string;
  score?: number;
  attributes?: Record<string, string>;
}
interface QueryResult {
  candidates?: Candidate[];
  nextPageToken?: string;
  next_page_token?: string;
  error?: string;
}

export function SearchPage(props: {
  entity: string | undefined;
  model: string | undefined;
  variant: string | undefined;
}) {
  const [models, setModels] = useState<VssModel[]>([]);
  const [entity, setEntity] = useState(props.entity ?? '');
  const [model, setModel] = useState(props.model ?? '');
  const [variant, setVariant] = useState(props.variant ?? '');
  const [by, setBy] = useState<'id' | 'vector'>('id');
  const [candidate, setCandidate] = useState('');
  const [vector, setVector] = useState('');
  const [attributes, setAttributes] = useState('');
  const [filters, setFilters] = useState<FilterRow[]>([]);
  const [pageSize, setPageSize] = useState('10');
  const [pages, setPages] = useState<{ token: string; answer: Answer<{ results?: QueryResult[] }> }[]>([]);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    get<{ models: VssModel[] }>(`${ADMIN}/models`).then(
      ({ models }) => {
        setModels(models);
        const first = models[0];
        if (first !== undefined && entity === '') {
          setEntity(first.entity);
          setModel(first.model_name);
          setVariant(first.variants[0]?.variant ?? '');
        }
      },
      () => setModels([]),
    );
  }, []);
  const seen = new Set<string>();
  for (const page of pages)
    for (const c of page.answer.body.results?.[0]?.candidates ?? [])
      for (const k of Object.keys(c.attributes ?? {})) seen.add(k);
  for (const a of attributes.split(',')) if (a.trim() !== '') seen.add(a.trim());
  const known = [...seen].sort();

  const search = async (token: string) => {
    setError(undefined);
    const query: Record<string, unknown> =
      by === 'id'
        ? { candidateId: candidate.trim() }
        : {
            embedding: {
              values: vector
                .split(/[\s,[\]]+/)
                .filter((v) => v !== '')
                .map(Number),
            },
          };
    if (token !== '') query.pageToken = token;
    const body = {
      entity,
      modelName: model,
      variant,
      queries: [query],
      pageSize: Number(pageSize),
      attributes: attributes
        .split(',')
        .map((a) => a.trim())
        .filter((a) => a !== ''),
      filters: filters
        .filter((f) => f.field.trim() !== '')
        .map((f) => ({
          field: f.field.trim(),
          op: `FILTER_OP_${f.op}`,
          values: f.values
            .split(',')
            .map((v) => v.trim())
            .filter((v) => v !== ''),
        })),
    };
    setBusy(true);
    try {
      const answer = await call<{ results?: QueryResult[] }>(SEARCH, { body });
      setPages((p) => (token === '' ? [{ token, answer }] : [...p, { token, answer }]));
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'INTERNAL', String(err)));
    } finally {
      setBusy(false);
    }
  };
  const last = pages[pages.length - 1]?.answer.body.results?.[0];
  const next = last?.nextPageToken ?? last?.next_page_token ?? '';
  const variants = models.find((m) => m.entity === entity && m.model_name === model)?.variants ?? [];

  return (
    <>
      <h1>Search playground</h1>
      <form
        class="search-form"
        onSubmit={(e) => {
          e.preventDefault();
          void search('');
        }}
      >
        <div class="form-row">
          {models.length > 0 ? (
            <>
              <label for="s-model">Model</label>
              <select
                id="s-model"
                value={`${entity}/${model}`}
                onChange={(e) => {
                  const [en = '', mo = ''] = (e.target as HTMLSelectElement).value.split('/');
                  setEntity(en);
                  setModel(mo);
                  setVariant(
                    models.find((m) => m.entity === en && m.model_name === mo)?.variants[0]?.variant ?? '',
                  );
                }}
              >
                {models.map((m) => (
                  <option key={`${m.entity}/${m.model_name}`} value={`${m.entity}/${m.model_name}`}>
                    {m.entity}/{m.model_name}
                  </option>
                ))}
              </select>
              <label for="s-variant">Variant</label>
              <select
                id="s-variant"
                value={variant}
                onChange={(e) => setVariant((e.target as HTMLSelectElement).value)}
              >
                {variants.map((v) => (
                  <option key={v.variant} value={v.variant}>
                    {v.variant} ({v.state})
                  </option>
                ))}
              </select>
            </>
          ) : (
            <>
              <label for="s-entity">Entity</label>
              <input
                id="s-entity"
                value={entity}
                onInput={(e) => setEntity((e.target as HTMLInputElement).value)}
              />
              <label for="s-modelname">Model</label>
              <input
                id="s-modelname"
                value={model}
                onInput={(e) => setModel((e.target as HTMLInputElement).value)}
              />
              <label for="s-variant">Variant</label>
              <input
                id="s-variant"
                value={variant}
                onInput={(e) => setVariant((e.target as HTMLInputElement).value)}
              />
            </>
          )}
        </div>
        <fieldset class="inline">
          <legend>Query by</legend>
          <label>
            <input type="radio" name="by" checked={by === 'id'} onChange={() => setBy('id')} /> candidate id
          </label>
          <label>
            <input type="radio" name="by" checked={by === 'vector'} onChange={() => setBy('vector')} /> vector
          </label>
        </fieldset>
        {by === 'id' ? (
          <div class="form-row">
            <label for="s-candidate">Candidate id</label>
            <input
              id="s-candidate"
              value={candidate}
              onInput={(e) => setCandidate((e.target as HTMLInputElement).value)}
            />
          </div>
        ) : (
          <>
            <label for="s-vector">Vector (numbers separated by commas or spaces)</label>
            <textarea
              id="s-vector"
              class="code"
              rows={3}
              value={vector}
              onInput={(e) => setVector((e.target as HTMLTextAreaElement).value)}
            />
          </>
        )}
        <div class="form-row">
          <label for="s-attributes">Attributes to return</label>
          <input
            id="s-attributes"
            placeholder="category,brand,price"
            value={attributes}
            onInput={(e) => setAttributes((e.target as HTMLInputElement).value)}
          />
          <label for="s-size">Page size</label>
          <input
            id="s-size"
            type="number"
            min="1"
            max="1000"
            value={pageSize}
            onInput={(e) => setPageSize((e.target as HTMLInputElement).value)}
          />
        </div>
        <fieldset>
          <legend>Filters</legend>
          <datalist id="attribute-names">
            {known.map((k) => (
              <option key={k} value={k} />
            ))}
          </datalist>
          {filters.map((f, i) => (
            <div class="form-row" key={i}>
              <label for={`f-field-${i}`}>Attribute</label>
              <input
                id={`f-field-${i}`}
                list="attribute-names"
                value={f.field}
                onInput={(e) =>
                  setFilters(
                    filters.map((g, j) =>
                      j === i ? { ...g, field: (e.target as HTMLInputElement).value } : g,
                    ),
                  )
                }
              />
              <label for={`f-op-${i}`}>Operator</label>
              <select
                id={`f-op-${i}`}
                value={f.op}
                onChange={(e) =>
                  setFilters(
                    filters.map((g, j) =>
                      j === i ? { ...g, op: (e.target as HTMLSelectElement).value as FilterRow['op'] } : g,
                    ),
                  )
                }
              >
                {FILTER_OPS.map((op) => (
                  <option key={op} value={op}>
                    {op}
                  </option>
                ))}
              </select>
              <label for={`f-values-${i}`}>Values</label>
              <input
                id={`f-values-${i}`}
                placeholder="a,b"
                value={f.values}
                onInput={(e) =>
                  setFilters(
                    filters.map((g, j) =>
                      j === i ? { ...g, values: (e.target as HTMLInputElement).value } : g,
                    ),
                  )
                }
              />
              <button type="button" onClick={() => setFilters(filters.filter((_g, j) => j !== i))}>
                Remove
              </button>
            </div>
          ))}
          <button
            type="button"
            onClick={() => setFilters([...filters, { field: known[0] ?? '', op: 'IN', values: '' }])}
          >
            Add a filter
          </button>
        </fieldset>
        <button type="submit" class="primary" disabled={busy}>
          Search
        </button>
      </form>
      <ErrorBox error={error} what="The search failed" />
      {pages.map((page, n) => {
        const result = page.answer.body.results?.[0];
        const columns = [
          ...new Set((result?.candidates ?? []).flatMap((c) => Object.keys(c.attributes ?? {}))),
        ].sort();
        return (
          <section key={page.token || 'first'} aria-label={`Page ${n + 1}`}>
            <h2>
              Page {n + 1} <span class="muted">({fmt(page.answer.elapsedMs, 1)} ms)</span>
            </h2>
            {result?.error ? <div class="error">{result.error}</div> : null}
            <div {...SCROLLABLE}>
              <table class="candidates">
                <thead>
                  <tr>
                    <th scope="col">#</th>
                    <th scope="col">Candidate</th>
                    <th scope="col">Score</th>
                    {columns.map((c) => (
                      <th scope="col" key={c}>
                        {c}
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {(result?.candidates ?? []).map((c, i) => (
                    <tr key={c.id}>
                      <td>{n * Number(pageSize) + i + 1}</td>
                      <th scope="row">{c.id}</th>
                      <td>{fmt(c.score ?? 0, 4)}</td>
                      {columns.map((k) => (
                        <td key={k}>{c.attributes?.[k] ?? '—'}</td>
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </section>
        );
      })}
      {next !== '' ? (
        <button type="button" disabled={busy} onClick={() => void search(next)}>
          Next page
        </button>
      ) : null}
    </>
  );
}
