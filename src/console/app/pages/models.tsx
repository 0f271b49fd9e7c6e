/**
 * Every model config with its state and its live rates. GET /api/v1/models is the config API; a
 * server without it (an older orchestrator) still answers GET /models, what its registry serves,
 * which the page shows with a note instead of nothing.
 */
import { ApiError, get } from '../api';
import { ErrorBox, fmt, Loading, SCROLLABLE, StateBadge, When } from '../components/ui';
import { useLoad } from '../hooks';
import { href } from '../router';
import type { ModelSummary, StatsAnswer } from '../types';

interface Listing {
  models: ModelSummary[];
  /** Read from GET /models: served versions only, no config store behind it. */
  servedOnly: boolean;
}

async function listModels(signal: AbortSignal): Promise<Listing> {
  try {
    const { models } = await get<{ models: ModelSummary[] }>('/api/v1/models', signal);
    return { models, servedOnly: false };
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
    const { models } = await get<{ models: Omit<ModelSummary, 'state'>[] }>('/models', signal);
    return {
      models: models.map((m) => ({
        ...m,
        state: m.version === undefined ? 'invalid' : m.rejected ? 'rejected' : 'live',
      })),
      servedOnly: true,
    };
  }
}

export function ModelsPage() {
  const listing = useLoad(listModels, [], 5000);
  const stats = useLoad((signal) => get<StatsAnswer>('/api/v1/models/stats', signal), [], 3000);
  const rates = new Map(stats.data?.models.map((m) => [m.model_config_id, m]) ?? []);
  return (
    <>
      <div class="heading">
        <h1>Model configs</h1>
        {listing.data?.servedOnly ? null : (
          <a class="button" href={href('new-model')}>
            New config
          </a>
        )}
      </div>
      <ErrorBox error={listing.error} what="Could not list the model configs" />
      {listing.data?.servedOnly ? (
        <p class="note">
          This server has no config API (GET /api/v1/models); showing what its orchestrator serves (GET
          /models).
        </p>
      ) : null}
      {listing.data === undefined ? (
        listing.error ? null : (
          <Loading what="model configs" />
        )
      ) : listing.data.models.length === 0 ? (
        <p>No model configs yet.</p>
      ) : (
        <div {...SCROLLABLE}>
          <table>
            <thead>
              <tr>
                <th scope="col">Config</th>
                <th scope="col">State</th>
                <th scope="col">Version</th>
                <th scope="col">Loaded</th>
                <th scope="col">Req/s</th>
                <th scope="col">Errors</th>
                <th scope="col">p50 / p99 ms</th>
              </tr>
            </thead>
            <tbody>
              {listing.data.models.map((model) => {
                const rate = rates.get(model.model_config_id);
                return (
                  <tr key={model.model_config_id}>
                    <th scope="row">
                      <a href={href('models', model.model_config_id)}>{model.model_config_id}</a>
                    </th>
                    <td>
                      <StateBadge state={model.state} />
                      {model.rejected ? (
                        <div class="reason">
                          {model.rejected.error}
                          {model.rejected.problems?.map((p) => (
                            <div key={p.path}>
                              <code>{p.path}</code>: {p.message}
                            </div>
                          ))}
                        </div>
                      ) : null}
                    </td>
                    <td>
                      <code>{model.version?.slice(0, 12) ?? '—'}</code>
                    </td>
                    <td>
                      <When at={model.loaded_at} />
                    </td>
                    <td>{fmt(rate?.requests_per_s)}</td>
                    <td>{rate === undefined ? '—' : `${fmt(rate.error_rate * 100, 1)} %`}</td>
                    <td>
                      {fmt(rate?.p50_ms, 1)} / {fmt(rate?.p99_ms, 1)}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {stats.error && listing.data !== undefined ? (
        <p class="muted">Live rates unavailable: {stats.error.message}</p>
      ) : null}
    </>
  );
}
