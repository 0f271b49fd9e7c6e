/**
 * One model config: its state, its DAG, live stats (polled, charted), and its revision history with a
 * one-click rollback to any revision (behind a confirmation that takes the comment).
 */
import { useEffect, useState } from 'preact/hooks';
import { type ApiError, get, seg, send } from '../api';
import { LiveChart } from '../components/chart';
import { DagView } from '../components/dag';
import { Confirm, ErrorBox, fmt, Loading, SCROLLABLE, StateBadge, When } from '../components/ui';
import { useLoad } from '../hooks';
import { href } from '../router';
import type { Dag, ModelDetail, ModelStats, Revision, StatsAnswer } from '../types';

/** Samples kept per chart: two minutes at one poll per 3 s. */
const KEEP = 40;

export function ModelPage({ id }: { id: string }) {
  const detail = useLoad((s) => get<ModelDetail>(`/api/v1/models/${seg(id)}`, s), [id], 5000);
  const dag = useLoad((s) => get<Dag>(`/api/v1/models/${seg(id)}/dag`, s), [id, detail.data?.version]);
  const revisions = useLoad(
    (s) => get<{ revisions: Revision[] }>(`/api/v1/models/${seg(id)}/revisions`, s),
    [id, detail.data?.version],
  );
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
        <Stats id={id} />
      </section>
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

function Stats({ id }: { id: string }) {
  const [history, setHistory] = useState<{ at: number; stats: ModelStats }[]>([]);
  const stats = useLoad((s) => get<StatsAnswer>('/api/v1/models/stats', s), [], 3000);
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
