/**
 * Register forms for the vss admin API: a store, a model, a variant. Each is the request body as
 * JSON, started from a template of the demo's shapes, and answered with the admin API's own error
 * (field and message) when it refuses one. A variant needs a reset of its model before it serves.
 */
import { useState } from 'preact/hooks';
import { type ApiError, send } from '../api';
import { ErrorBox } from '../components/ui';
import { href } from '../router';
import { ADMIN } from './vss';

const TEMPLATES = {
  store: {
    store_id: 2,
    entity: 'shop',
    db_conf_id: 'embedded',
    embeddings_table: 'shop_embeddings',
    aggregator_table: 'shop_attributes',
  },
  model: {
    entity: 'shop',
    model_name: 'my_model',
    ingestion_column_mapping: {
      id_column: 'product_id',
      embedding_column: 'embedding',
      to_be_indexed_column: 'indexed',
    },
    embedding_store_enabled: true,
    embedding_store_ttl: 0,
    mq_id: 1,
    model_config: { distance_function: 'COSINE', vector_dimension: 32 },
    store_id: 2,
    training_data_path: '/path/to/parquet-or-jsonl',
  },
  variant: {
    entity: 'shop',
    model_name: 'my_model',
    variant: 'all',
    vss_filter: { criteria: [] },
    vectordb_type: 'EMBEDDED',
    vectordb_config: {},
    job_frequency: 'FREQ_1W',
  },
} as const;

type Kind = keyof typeof TEMPLATES;

export function RegisterPage() {
  return (
    <>
      <h1>Register with vss</h1>
      <p>
        Each form is the admin API's request body (see <a href="/docs">the API docs</a> and the admin API's
        own at its <code>/docs</code>). A model's variants serve once a reset of the model has run: reset it
        from <a href={href('vss')}>its page</a>.
      </p>
      {(Object.keys(TEMPLATES) as Kind[]).map((kind) => (
        <RegisterForm key={kind} kind={kind} />
      ))}
    </>
  );
}

function RegisterForm({ kind }: { kind: Kind }) {
  const [text, setText] = useState(JSON.stringify(TEMPLATES[kind], null, 2));
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [done, setDone] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    setDone(undefined);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (err) {
      setDone(`Not JSON: ${(err as Error).message}`);
      return;
    }
    setBusy(true);
    try {
      await send('POST', `${ADMIN}/register-${kind}`, body);
      setDone(`Registered the ${kind}.`);
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };
  const id = `register-${kind}`;
  return (
    <form class="card" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Register a {kind}</h2>
      <label for={id}>Body (JSON)</label>
      <textarea
        id={id}
        class="code"
        rows={Math.min(14, text.split('\n').length + 1)}
        spellcheck={false}
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
      />
      <p>
        <button type="submit" class="primary" disabled={busy}>
          Register the {kind}
        </button>
      </p>
      <ErrorBox error={error} what={`The ${kind} was not registered`} />
      {done ? <p role="status">{done}</p> : null}
    </form>
  );
}
