/**
 * What the retrieval end-to-end tests share (retrieve-rank, retrieve-caller-auth): vss products whose
 * ids are the stack's catalog ids, served, and model configs written to the stack's store and waited
 * for until the orchestrator serves them.
 */
import type { ModelConfigInput } from '../../src/orchestrator/config/index.js';
import { eventually } from './servers.js';
import type { Stack } from './stack.js';
import { registerIngestModel, seededVector, serveVersion } from './vss-ingest-catalog.js';
import { ingestEmbeddings, type VssStack } from './vss-stack.js';

/** `catalog/products` (dimension 8, variant `all`) holding c1…c`count` with `category(i)`, version 1 served. */
export async function serveProducts(
  vss: VssStack,
  count: number,
  category: (i: number) => string,
): Promise<void> {
  const model = await registerIngestModel(vss.store, {
    entity: 'catalog',
    modelName: 'products',
    dimension: 8,
    variants: { all: {} },
  });
  await ingestEmbeddings(
    vss,
    model,
    Array.from({ length: count }, (_, i) => ({
      id: `c${i + 1}`,
      versions: { all: 1 },
      vector: seededVector(i, 8),
      payload: { category: category(i) },
    })),
  );
  await serveVersion(vss.store, model, ['all'], 1);
}

/** Writes a model config and waits until the orchestrator serves it. */
export async function putServed(stack: Stack, doc: ModelConfigInput): Promise<void> {
  await stack.config.put(`models/${doc.model_config_id}`, doc);
  await eventually(
    () => stack.orchestrator.registry.get(doc.model_config_id)?.document !== undefined,
    10_000,
    `${doc.model_config_id} to serve`,
  );
}
