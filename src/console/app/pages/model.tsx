/**
 * One model config: its state, its DAG, live stats (polled, charted), its shadow's comparison figures
 * and its split's arms with their live numbers (polled like the stats), and its revision history with
 * a one-click rollback to any revision (behind a confirmation that takes the comment).
 */
import { useEffect, useState } from 'preact/hooks';
import { type ApiError, get, seg, send } from '../api';
import { LiveChart } from '../components/chart';
import { DagView } from '../components/dag';
import { Confirm, ErrorBox, fmt, Loading, SCROLLABLE, StateBadge, When } from '../components/ui';
import { type Loaded, useLoad } from '../hooks';
import { href } from '../router';
import type {
  Dag,
  ModelDetail,
  ModelStats,
  Revision,
  ShadowConfig,
  ShadowFigures,
  SplitConfig,
  StatsAnswer,
} from '../types';

/** Samples kept per chart: two minutes at one poll per 3 s. */
const KEEP = 40;

export function ModelPage({ id }: { id: string }) {
  const detail = useLoad((s) => get<ModelDetail>(`/api/v1/models/${seg(id)}`, s), [id], 5000);
  const dag = useLoad((s) => get<Dag>(`/api/v1/models/${seg(id)}/dag`, s), [id, detail.data?.version]);
  const revisions = useLoad(
    (s) => get<{ revisions: Revision[] }>(`/api/v1/models/${seg(id)}/revisions`, s),
    [id, detail.data?.version],
  );
  const stats = useLoad((s) => get<StatsAnswer>('/api/v1/models/stats', s), [], 3000);
  // What serves is what the shadow and split sections describe (the stored document may be rejected).
  const serving = (detail.data?.live_document ?? undefined) as
    | { shadow?: ShadowConfig; split?: SplitConfig }
    | undefined;
  return (
    <>
      <div class="heading">
        <h1>
          {id} {detail.data ? <StateBadge state={detail.data.state} /> : null}
        </h1>
        <div class="actions">
          <a class="button" href={href('models', id, 'edit')}>
            Edit
          </a>
          <a class="button" href={`${href('new-model')}?from=${encodeURIComponent(id)}`}>
            Clone
          </a>
          <a class="button" href={href('predict', id)}>
            Try it
          </a>
        </div>
      </div>
      <ErrorBox error={detail.error} what="Could not read the config" />
      {detail.data ? (
        <p>
          Serving version <code>{detail.data.version ?? 'none'}</code>
          {detail.data.rejected ? (
            <span class="reason">
              {' '}
              — the latest change ({detail.data.rejected.version}) was rejected: {detail.data.rejected.error}
              {detail.data.rejected.problems?.map((p) => (
                <span key={p.path}>
                  {' '}
                  <code>{p.path}</code>: {p.message}
                </span>
              ))}
            </span>
          ) : null}
        </p>
      ) : detail.error ? null : (
        <Loading what="the config" />
      )}
      <section aria-labelledby="stats-title">
        <h2 id="stats-title">Live stats</h2>
        <Stats id={id} stats={stats} />
      </section>
      {serving?.shadow ? (
        <section aria-labelledby="shadow-title">
          <h2 id="shadow-title">Shadow</h2>
          <Shadow id={id} shadow={serving.shadow} />
        </section>
      ) : null}
      {serving?.split ? (
        <section aria-labelledby="split-title">
          <h2 id="split-title">A/B split</h2>
          <Split id={id} split={serving.split} stats={stats} />
        </section>
      ) : null}
      <section aria-labelledby="dag-title">
        <h2 id="dag-title">DAG</h2>
        <ErrorBox error={dag.error} what="Could not read the DAG" />
        {dag.data ? <DagView dag={dag.data} /> : dag.error ? null : <Loading what="the DAG" />}
      </section>
      <section aria-labelledby="revisions-title">
        <h2 id="revisions-title">Revisions</h2>
        <ErrorBox error={revisions.error} what="Could not read the revisions" />
        {revisions.data ? (
          <Revisions id={id} revisions={revisions.data.revisions} onChanged={detail.reload} />
        ) : revisions.error ? null : (
          <Loading what="revisions" />
        )}
      </section>
    </>
  );
}

function Stats({ id, stats }: { id: string; stats: Loaded<StatsAnswer> }) {
  const [history, setHistory] = useState<{ at: number; stats: ModelStats }[]>([]);
  useEffect(() => {
    const mine = stats.data?.models.find((m) => m.model_config_id === id);
    if (mine !== undefined) setHistory((h) => [...h, { at: Date.now() / 1000, stats: mine }].slice(-KEEP));
  }, [stats.data, id]);
  if (stats.error) return <ErrorBox error={stats.error} what="Live stats unavailable" />;
  const last = history[history.length - 1]?.stats;
  if (last === undefined) return <p class="muted">No requests yet in the window (stats poll every 3 s).</p>;
  return (
    <>
      {history.length < 2 ? (
        <p class="muted">Collecting samples for the charts (one every 3 s)…</p>
      ) : (
        <div class="charts">
          <LiveChart
            title="Requests and errors per second"
            unit="/s"
            series={[
              { label: 'requests', color: '#1f6feb' },
              { label: 'errors', color: '#cf222e' },
            ]}
            points={history.map((h) => [h.at, h.stats.requests_per_s, h.stats.errors_per_s])}
          />
          <LiveChart
            title="Latency"
            unit="ms"
            series={[
              { label: 'p50', color: '#1a7f37' },
              { label: 'p99', color: '#9a6700' },
            ]}
            points={history.map((h) => [h.at, h.stats.p50_ms, h.stats.p99_ms])}
          />
        </div>
      )}
      <div {...SCROLLABLE}>
        <table>
          <caption>Per component, last {stats.data?.window_s ?? '?'} s</caption>
          <thead>
            <tr>
              <th scope="col">Component</th>
              <th scope="col">Kind</th>
              <th scope="col">Req/s</th>
              <th scope="col">Errors</th>
              <th scope="col">p50 ms</th>
              <th scope="col">p99 ms</th>
            </tr>
          </thead>
          <tbody>
            {last.components.map((c) => (
              <tr key={c.name}>
                <th scope="row">{c.name}</th>
                <td>{c.kind}</td>
                <td>{fmt(c.requests_per_s)}</td>
                <td>{fmt(c.error_rate * 100, 1)} %</td>
                <td>{fmt(c.p50_ms, 1)}</td>
                <td>{fmt(c.p99_ms, 1)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** The shadow block and how the shadow's answers compared with this config's, polled every 3 s. */
function Shadow({ id, shadow }: { id: string; shadow: ShadowConfig }) {
  const figures = useLoad(
    (s) => get<ShadowFigures>(`/api/v1/models/${seg(id)}/shadows/${seg(shadow.model_config_id)}`, s),
    [id, shadow.model_config_id],
    3000,
  );
  const f = figures.data;
  const latency = Object.entries(f?.latency_diff_ms ?? {});
  return (
    <>
      <p>
        Mirrors {shadow.percentage} % of the requests to{' '}
        <a href={href('models', shadow.model_config_id)}>{shadow.model_config_id}</a>, comparing the top{' '}
        {shadow.k ?? 10} targets.
      </p>
      <ErrorBox error={figures.error} what="Could not read the comparison" />
      {f ? (
        <>
          <dl class="figures">
            <dt>Compared</dt>
            <dd>{f.compared}</dd>
            <dt>Sampled</dt>
            <dd>{f.sampled}</dd>
            <dt>Dropped (queue full / shadow not loaded)</dt>
            <dd>
              {f.dropped.queue_full} / {f.dropped.unknown_shadow}
            </dd>
            <dt>Failed</dt>
            <dd>{f.failed}</dd>
            <dt>Overlap@{f.k ?? shadow.k ?? 10}</dt>
            <dd>{fmt(f.overlap_at_k, 3)}</dd>
            <dt>Kendall τ</dt>
            <dd>{fmt(f.kendall_tau, 3)}</dd>
            <dt>Mean |score difference|</dt>
            <dd>{fmt(f.mean_abs_diff, 4)}</dd>
            <dt>Max |score difference|</dt>
            <dd>{fmt(f.max_abs_diff, 4)}</dd>
          </dl>
          <p class="muted">Over the latest {f.window} comparisons (figures poll every 3 s).</p>
          {latency.length > 0 ? (
            <div {...SCROLLABLE}>
              <table>
                <caption>Latency difference, shadow minus primary</caption>
                <thead>
                  <tr>
                    <th scope="col">Component</th>
                    <th scope="col">ms</th>
                  </tr>
                </thead>
                <tbody>
                  {latency.map(([name, ms]) => (
                    <tr key={name}>
                      <th scope="row">{name}</th>
                      <td>{fmt(ms, 1)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          ) : null}
        </>
      ) : figures.error ? null : (
        <Loading what="the comparison" />
      )}
    </>
  );
}

/** The split's key and arms, each with its weight and what it served of this config's requests. */
function Split({ id, split, stats }: { id: string; split: SplitConfig; stats: Loaded<StatsAnswer> }) {
  const arms = stats.data?.models.find((m) => m.model_config_id === id)?.arms ?? [];
  const live = new Map(arms.map((arm) => [arm.model_config_id, arm]));
  return (
    <>
      <p>
        Sticky on the context feature <code>{split.key}</code>
        {split.salt ? (
          <>
            {' '}
            (salt <code>{split.salt}</code>)
          </>
        ) : null}
        : one key value always lands in the same arm.
      </p>
      <div {...SCROLLABLE}>
        <table>
          <caption>Arms, last {stats.data?.window_s ?? '?'} s</caption>
          <thead>
            <tr>
              <th scope="col">Arm</th>
              <th scope="col">Weight</th>
              <th scope="col">Req/s</th>
              <th scope="col">Errors</th>
              <th scope="col">p99 ms</th>
            </tr>
          </thead>
          <tbody>
            {split.arms.map((arm) => {
              const n = live.get(arm.model_config_id);
              return (
                <tr key={arm.model_config_id}>
                  <th scope="row">
                    <a href={href('models', arm.model_config_id)}>{arm.model_config_id}</a>
                  </th>
                  <td>{arm.weight} %</td>
                  <td>{fmt(n?.requests_per_s)}</td>
                  <td>{n ? `${fmt(n.error_rate * 100, 1)} %` : '—'}</td>
                  <td>{fmt(n?.p99_ms, 1)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </>
  );
}

function Revisions({
  id,
  revisions,
  onChanged,
}: {
  id: string;
  revisions: Revision[];
  onChanged: () => void;
}) {
  const [target, setTarget] = useState<Revision | undefined>(undefined);
  const [comment, setComment] = useState('');
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [done, setDone] = useState<string | undefined>(undefined);
  const rollback = async (revision: Revision) => {
    setTarget(undefined);
    try {
      const answer = await send<{ revision: number; version: string }>(
        'POST',
        `/api/v1/models/${seg(id)}/rollback`,
        {
          revision: revision.revision,
          comment: comment || `roll back to revision ${revision.revision}`,
        },
      );
      setError(undefined);
      setDone(`Rolled back to revision ${revision.revision}: now revision ${answer.revision}.`);
      onChanged();
    } catch (err) {
      setError(err as ApiError);
    }
  };
  return (
    <>
      <ErrorBox error={error} what="The rollback failed" />
      {done ? (
        <p class="ok-note" role="status">
          {done}
        </p>
      ) : null}
      <div {...SCROLLABLE}>
        <table>
          <thead>
            <tr>
              <th scope="col">Revision</th>
              <th scope="col">When</th>
              <th scope="col">Who</th>
              <th scope="col">Action</th>
              <th scope="col">Comment</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {revisions.map((revision, i) => (
              <tr key={revision.revision}>
                <th scope="row">{revision.revision}</th>
                <td>
                  <When at={revision.at} />
                </td>
                <td>{revision.author}</td>
                <td>{revision.action}</td>
                <td>{revision.comment}</td>
                <td>
                  {i === 0 ? (
                    <span class="muted">current</span>
                  ) : (
                    <button type="button" onClick={() => setTarget(revision)}>
                      Roll back to {revision.revision}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {target ? (
        <Confirm
          title={`Roll ${id} back to revision ${target.revision}?`}
          confirmLabel="Roll back"
          onConfirm={() => void rollback(target)}
          onCancel={() => setTarget(undefined)}
        >
          <p>The orchestrator loads that revision's document as a new revision.</p>
          <label for="rollback-comment">Why (comment)</label>
          <input
            id="rollback-comment"
            value={comment}
            onInput={(e) => setComment((e.target as HTMLInputElement).value)}
          />
        </Confirm>
      ) : null}
    </>
  );
}
