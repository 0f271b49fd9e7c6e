/**
 * vss through the admin API (proxied by the ops server under /api/v1/vss-admin): every model with its
 * variants (state, read and write versions with their counts, recall, cluster), one model's versions
 * and recent operations, and the lifecycle actions behind a confirmation.
 */
import { useState } from 'preact/hooks';
import { type ApiError, get, seg, send } from '../api';
import { Confirm, ErrorBox, fmt, Loading, SCROLLABLE, StateBadge, When } from '../components/ui';
import { useLoad } from '../hooks';
import { href, navigate } from '../router';
import type { VssModel, VssModelDetail, VssStore, VssVariant, VssVersion } from '../types';

export const ADMIN = '/api/v1/vss-admin';

const counts = (c: VssVariant['read_counts']) =>
  c === null
    ? '—'
    : `${c.indexed_count.toLocaleString()} indexed / ${c.ingested_count.toLocaleString()} ingested`;

export function VssPage() {
  const models = useLoad((s) => get<{ models: VssModel[] }>(`${ADMIN}/models`, s), [], 5000);
  const stores = useLoad((s) => get<{ stores: VssStore[] }>(`${ADMIN}/stores`, s), [], 5000);
  return (
    <>
      <div class="heading">
        <h1>vss models</h1>
        <div class="actions">
          <a class="button" href={href('vss', 'register')}>
            Register
          </a>
          <a class="button" href={href('search')}>
            Search playground
          </a>
        </div>
      </div>
      <ErrorBox error={models.error} what="Could not list the vss models" />
      {models.data === undefined ? (
        models.error ? null : (
          <Loading what="vss models" />
        )
      ) : models.data.models.length === 0 ? (
        <p>No vss models registered.</p>
      ) : (
        models.data.models.map((model) => (
          <section
            class="card"
            key={`${model.entity}/${model.model_name}`}
            aria-labelledby={`m-${model.entity}-${model.model_name}`}
          >
            <h2 id={`m-${model.entity}-${model.model_name}`}>
              <a href={href('vss', model.entity, model.model_name)}>
                {model.entity}/{model.model_name}
              </a>{' '}
              <StateBadge state={model.state} />
            </h2>
            <p class="muted">
              store {model.store_id} · {model.model_config.distance_function},{' '}
              {model.model_config.vector_dimension} dimensions · cluster {model.cluster}
            </p>
            <VariantTable model={model} />
          </section>
        ))
      )}
      <StoreTable stores={stores.data?.stores} />
      <ErrorBox error={stores.error} what="Could not list the vss stores" />
    </>
  );
}

/** The registered stores: the entity each serves and where its embeddings and aggregates live. */
function StoreTable({ stores }: { stores: VssStore[] | undefined }) {
  if (stores === undefined || stores.length === 0) return null;
  return (
    <section aria-labelledby="stores-title">
      <h2 id="stores-title">Stores</h2>
      <div {...SCROLLABLE}>
        <table class="stores">
          <thead>
            <tr>
              <th scope="col">Store</th>
              <th scope="col">Entity</th>
              <th scope="col">Database</th>
              <th scope="col">Embeddings table</th>
              <th scope="col">Aggregator table</th>
              <th scope="col">Registered</th>
            </tr>
          </thead>
          <tbody>
            {stores.map((store) => (
              <tr key={store.store_id}>
                <th scope="row">{store.store_id}</th>
                <td>{store.entity}</td>
                <td>{store.db_conf_id}</td>
                <td>{store.embeddings_table}</td>
                <td>{store.aggregator_table}</td>
                <td>{new Date(store.created_at).toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function VariantTable({ model }: { model: VssModel }) {
  return (
    <div {...SCROLLABLE}>
      <table>
        <thead>
          <tr>
            <th scope="col">Variant</th>
            <th scope="col">State</th>
            <th scope="col">Read v.</th>
            <th scope="col">Write v.</th>
            <th scope="col">Read version counts</th>
            <th scope="col">Served points</th>
            <th scope="col">Cluster</th>
            <th scope="col">
              <span class="sr-only">Search</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {model.variants.map((v) => (
            <tr key={v.variant}>
              <th scope="row">{v.variant}</th>
              <td>
                <StateBadge state={v.state} />
                {v.failure_reason ? <div class="reason">{v.failure_reason}</div> : null}
              </td>
              <td>{v.read_version ?? '—'}</td>
              <td>{v.write_version ?? '—'}</td>
              <td>{counts(v.read_counts)}</td>
              <td>
                {v.served_index
                  ? `${v.served_index.indexed_points.toLocaleString()} / ${v.served_index.points.toLocaleString()}`
                  : '—'}
              </td>
              <td>{v.cluster}</td>
              <td>
                <a href={href('search', v.entity, v.model_name, v.variant)}>Search</a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The recall a version measured (verify_recall): the lowest bucket's, with every bucket on hover. */
function Recall({ recall }: { recall: unknown }) {
  if (recall === null || recall === undefined) return <span class="muted">—</span>;
  const numbers: number[] = [];
  const walk = (v: unknown) => {
    if (typeof v === 'number') numbers.push(v);
    else if (v && typeof v === 'object') for (const x of Object.values(v)) walk(x);
  };
  const r = recall as { min?: number; recall?: number };
  walk(recall);
  const shown =
    typeof r.min === 'number'
      ? r.min
      : typeof r.recall === 'number'
        ? r.recall
        : Math.min(...numbers.filter((n) => n <= 1));
  return <span title={JSON.stringify(recall)}>{Number.isFinite(shown) ? fmt(shown, 3) : 'measured'}</span>;
}

type Action = { path: string; label: string; body: Record<string, unknown>; explain: string };

export function VssModelPage({ entity, model }: { entity: string; model: string }) {
  const detail = useLoad(
    (s) => get<VssModelDetail>(`${ADMIN}/models/${seg(entity)}/${seg(model)}`, s),
    [entity, model],
    3000,
  );
  const [action, setAction] = useState<Action | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const key = { entity, model_name: model };
  const run = async (chosen: Action) => {
    setAction(undefined);
    try {
      const accepted = await send<{ operation_id: string }>('POST', `${ADMIN}${chosen.path}`, chosen.body);
      navigate('vss', 'operations', accepted.operation_id);
    } catch (err) {
      setError(err as ApiError);
    }
  };
  const actions: Action[] = [
    {
      path: '/reset-model',
      label: 'Reset',
      body: key,
      explain:
        'Ingests the training data into a new version, indexes it and flips every variant to it once its recall is verified.',
    },
    {
      path: '/promote-model',
      label: 'Promote',
      body: key,
      explain: 'Moves the model from the experiment cluster to production.',
    },
    {
      path: '/rollback-model',
      label: 'Roll back',
      body: key,
      explain: 'Every variant reads its previous version again (within the rollback window).',
    },
  ];
  return (
    <>
      <div class="heading">
        <h1>
          {entity}/{model} {detail.data ? <StateBadge state={detail.data.state} /> : null}
        </h1>
        <div class="actions">
          {actions.map((a) => (
            <button type="button" key={a.path} onClick={() => setAction(a)}>
              {a.label}
            </button>
          ))}
        </div>
      </div>
      <ErrorBox error={error} what="The action was refused" />
      <ErrorBox error={detail.error} what="Could not read the model" />
      {detail.data === undefined ? (
        detail.error ? null : (
          <Loading what="the model" />
        )
      ) : (
        <>
          <p class="muted">
            store {detail.data.store_id} · {detail.data.model_config.distance_function},{' '}
            {detail.data.model_config.vector_dimension} dimensions · cluster {detail.data.cluster} · training
            data <code>{detail.data.training_data_path}</code>
          </p>
          <h2>Variants</h2>
          <VariantTable model={detail.data} />
          <div class="variant-actions">
            {detail.data.variants.map((v) => (
              <span key={v.variant}>
                <button
                  type="button"
                  onClick={() =>
                    setAction({
                      path: '/promote-variant',
                      label: `Promote ${v.variant}`,
                      body: { ...key, variant: v.variant },
                      explain: `Moves variant ${v.variant} to production.`,
                    })
                  }
                >
                  Promote {v.variant}
                </button>
              </span>
            ))}
          </div>
          <h2>Versions</h2>
          <Versions versions={detail.data.versions} />
          <h2>Recent operations</h2>
          <div {...SCROLLABLE}>
            <table>
              <thead>
                <tr>
                  <th scope="col">Operation</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Status</th>
                  <th scope="col">Step</th>
                  <th scope="col">Progress</th>
                  <th scope="col">Started</th>
                </tr>
              </thead>
              <tbody>
                {detail.data.operations.map((op) => (
                  <tr key={op.operation_id}>
                    <th scope="row">
                      <a href={href('vss', 'operations', op.operation_id)}>{op.operation_id.slice(0, 12)}</a>
                    </th>
                    <td>{op.kind}</td>
                    <td>
                      <StateBadge state={op.status} />
                    </td>
                    <td>{op.step ?? '—'}</td>
                    <td>{typeof op.progress === 'number' ? `${Math.round(op.progress * 100)} %` : '—'}</td>
                    <td>
                      <When at={op.created_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      {action ? (
        <Confirm
          title={`${action.label} ${entity}/${model}?`}
          confirmLabel={action.label}
          onConfirm={() => void run(action)}
          onCancel={() => setAction(undefined)}
        >
          <p>{action.explain}</p>
        </Confirm>
      ) : null}
    </>
  );
}

function Versions({ versions }: { versions: VssVersion[] }) {
  return (
    <div {...SCROLLABLE}>
      <table>
        <thead>
          <tr>
            <th scope="col">Version</th>
            <th scope="col">Status</th>
            <th scope="col">Ingested</th>
            <th scope="col">Failed</th>
            <th scope="col">Indexed</th>
            <th scope="col">Recall</th>
            <th scope="col">Indexed at</th>
          </tr>
        </thead>
        <tbody>
          {versions.map((v) => (
            <tr key={v.version}>
              <th scope="row">{v.version}</th>
              <td>
                <StateBadge state={v.status} />
                {v.failure_reason ? <div class="reason">{v.failure_reason}</div> : null}
              </td>
              <td>{v.ingested_count.toLocaleString()}</td>
              <td>{v.failed_count.toLocaleString()}</td>
              <td>{v.indexed_count.toLocaleString()}</td>
              <td>
                <Recall recall={v.recall} />
              </td>
              <td>
                <When at={v.indexed_at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
