/**
 * A JSON call to the vss admin HTTP API, as a client outside the process makes it (tests and
 * benchmarks): the status and the parsed body.
 */
export async function adminCall(
  base: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

/** A register-model body over training rows with columns `id`, `emb` (the vector) and `flag` (to be indexed), COSINE. */
export function registerModelBody(model: {
  entity: string;
  modelName: string;
  storeId: number;
  dimension: number;
  trainingDataPath: string;
}): Record<string, unknown> {
  return {
    entity: model.entity,
    model_name: model.modelName,
    ingestion_column_mapping: JSON.stringify({
      id_column: 'id',
      embedding_column: 'emb',
      to_be_indexed_column: 'flag',
    }),
    embedding_store_enabled: true,
    embedding_store_ttl: 0,
    mq_id: 1,
    model_config: JSON.stringify({ distance_function: 'COSINE', vector_dimension: model.dimension }),
    store_id: model.storeId,
    training_data_path: model.trainingDataPath,
  };
}
