/**
 * Short human text for the API's answers: a registered store, model or variant, an accepted reset,
 * and the `models` table. Like operation-view.ts it reads the vss.md field names leniently (a
 * resource bare or under its kind's name; JSON-holding fields as a string or an object): output is
 * a convenience, and `--json` shows the answer exactly.
 */
import { textTable } from '../text-table.js';

type Fields = Record<string, unknown>;

const isObject = (value: unknown): value is Fields =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** `body[key]` when it is an object (`{ "model": {...} }`), else the body itself. */
function unwrap(body: unknown, key: string): Fields {
  if (!isObject(body)) return {};
  return isObject(body[key]) ? body[key] : body;
}

/** A JSON-holding field as an object, whether the API sent it as a string or as an object. */
function jsonField(value: unknown): Fields {
  if (isObject(value)) return value;
  if (typeof value !== 'string') return {};
  try {
    const parsed = JSON.parse(value) as unknown;
    return isObject(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

const show = (value: unknown): string =>
  value === undefined || value === null || value === ''
    ? '-'
    : typeof value === 'object'
      ? JSON.stringify(value)
      : String(value);

/** Key/value pairs that are present, as `key value, key value`. */
function details(pairs: [string, unknown][]): string {
  return pairs
    .filter(([, value]) => value !== undefined && value !== null && value !== '')
    .map(([label, value]) => `${label} ${show(value)}`)
    .join(', ');
}

export function describeStore(body: unknown): string {
  const store = unwrap(body, 'store');
  return `Store ${show(store.store_id)} registered for entity ${show(store.entity)}: ${details([
    ['db_conf_id', store.db_conf_id],
    ['embeddings table', store.embeddings_table],
    ['aggregator table', store.aggregator_table],
  ])}`;
}

export function describeModel(body: unknown): string {
  const model = unwrap(body, 'model');
  const config = jsonField(model.model_config);
  const shape =
    config.vector_dimension === undefined
      ? undefined
      : `${show(config.vector_dimension)}-d ${show(config.distance_function)}`;
  return `Model ${show(model.entity)}/${show(model.model_name)} registered: ${details([
    ['state', model.state],
    ['cluster', model.cluster],
    ['vectors', shape],
    ['store', model.store_id],
    ['training data', model.training_data_path],
  ])}`;
}

export function describeVariant(body: unknown, done = 'registered'): string {
  const variant = unwrap(body, 'variant');
  return `Variant ${show(variant.entity)}/${show(variant.model_name)}/${show(variant.variant)} ${done}: ${details(
    [
      ['state', variant.state],
      ['cluster', variant.cluster],
      ['vector DB', variant.vectordb_type],
      ['read version', variant.read_version],
      ['write version', variant.write_version],
      ['ef_search', variant.ef_search],
      ['min recall', variant.min_recall],
    ],
  )}`;
}

/** rollback-model's answer: each variant's `from_version → to_version`. */
export function describeRollback(body: unknown): string {
  const done = isObject(body) ? body : {};
  const variants = Array.isArray(done.variants) ? done.variants.filter(isObject) : [];
  const moved = variants.map((v) => `${show(v.variant)} ${show(v.from_version)} → ${show(v.to_version)}`);
  const retired = Array.isArray(done.retired_versions) ? done.retired_versions : [];
  return `Rolled back ${show(done.entity)}/${show(done.model_name)}: ${moved.join(', ') || 'no variant'}${
    retired.length === 0
      ? ''
      : `; version ${retired.map(show).join(', ')} retired (kept for its grace period)`
  }`;
}

/** A listed variant's rollback window: `vN until <time>`, `vN`, or `-`. */
function rollbackCell(variant: Fields): string {
  const window = isObject(variant.rollback) ? variant.rollback : {};
  if (window.available !== true || variant.previous_read_version == null) return '-';
  const to = `v${show(variant.previous_read_version)}`;
  return typeof window.until === 'string' ? `${to} until ${window.until}` : to;
}

/** The recall a version's gate measured: the lowest bucket and whether it passed. */
function recallCell(version: Fields): string {
  const recall = isObject(version.recall) ? version.recall : undefined;
  if (recall === undefined) return '-';
  const variants = isObject(recall.variants) ? Object.values(recall.variants).filter(isObject) : [];
  let lowest: number | undefined;
  for (const variant of variants) {
    const buckets = isObject(variant.buckets) ? Object.values(variant.buckets).filter(isObject) : [];
    for (const b of buckets) if (typeof b.recall === 'number') lowest = Math.min(lowest ?? 1, b.recall);
  }
  const figure = lowest === undefined ? '' : ` ${lowest.toFixed(3)}`;
  return `${recall.passed === true ? 'passed' : 'refused'}${figure}`;
}

/** The reset's answer: `operation_id`, `variant_version_map`, `mq_id`, `training_data_path`, `version`. */
export function describeReset(body: unknown, operationId: string): string {
  const reset = isObject(body) ? body : {};
  const map = jsonField(reset.variant_version_map);
  const variants = Object.entries(map)
    .map(([variant, version]) => `${variant} → ${show(version)}`)
    .join(', ');
  return `Reset accepted: operation ${operationId}; ${details([
    ['version', reset.version],
    ['variants', variants],
    ['mq_id', reset.mq_id],
    ['training data', reset.training_data_path],
  ])}`;
}

/** The models of `GET /models` (an array, or under `models`) or the one of `GET /models/{e}/{m}`. */
export function modelsOf(body: unknown): Fields[] {
  if (Array.isArray(body)) return body.filter(isObject);
  if (isObject(body) && Array.isArray(body.models)) return body.models.filter(isObject);
  const one = unwrap(body, 'model');
  return Object.keys(one).length === 0 ? [] : [one];
}

/**
 * One row per variant (a model without variants gets one row of its own); with `detail` (one model),
 * its versions and recent operations too.
 */
export function modelsTable(models: readonly Fields[], detail: boolean): string {
  if (models.length === 0) return 'No models registered.';
  const rows: string[][] = [
    ['ENTITY', 'MODEL', 'VARIANT', 'STATE', 'CLUSTER', 'READ', 'WRITE', 'ROLLBACK TO', 'LAST ERROR'],
  ];
  for (const model of models) {
    const variants = Array.isArray(model.variants) ? model.variants.filter(isObject) : [];
    if (variants.length === 0) {
      rows.push([
        show(model.entity),
        show(model.model_name),
        '-',
        show(model.state),
        show(model.cluster),
        '-',
        '-',
        '-',
        show(model.failure_reason),
      ]);
    }
    for (const variant of variants) {
      rows.push([
        show(model.entity),
        show(model.model_name),
        show(variant.variant),
        show(variant.state),
        show(variant.cluster),
        show(variant.read_version),
        show(variant.write_version),
        rollbackCell(variant),
        show(variant.failure_reason),
      ]);
    }
  }
  const sections = [textTable(rows)];
  if (detail) {
    for (const model of models) {
      const versions = Array.isArray(model.versions) ? model.versions.filter(isObject) : [];
      if (versions.length === 0) continue;
      const versionRows = [['VERSION', 'STATUS', 'INGESTED', 'FAILED', 'INDEXED', 'RECALL', 'ROLLED BACK']];
      for (const v of versions) {
        versionRows.push([
          show(v.version),
          show(v.status),
          show(v.ingested_count),
          show(v.failed_count),
          show(v.indexed_count),
          recallCell(v),
          show(v.rolled_back_at),
        ]);
      }
      sections.push(
        `Versions of ${show(model.entity)}/${show(model.model_name)}:\n${textTable(versionRows)}`,
      );
    }
    for (const model of models) {
      const operations = Array.isArray(model.operations) ? model.operations.filter(isObject) : [];
      if (operations.length === 0) continue;
      const operationRows = [['OPERATION', 'KIND', 'VARIANT', 'STATUS', 'STEP', 'PROGRESS']];
      for (const o of operations) {
        const progress = typeof o.progress === 'number' ? `${Math.floor(o.progress * 100)}%` : '-';
        operationRows.push([
          show(o.operation_id),
          show(o.kind),
          show(o.variant),
          show(o.status),
          show(o.step),
          progress,
        ]);
      }
      sections.push(
        `Recent operations of ${show(model.entity)}/${show(model.model_name)}:\n${textTable(operationRows)}`,
      );
    }
  }
  return sections.join('\n\n');
}

/** Left-aligned columns, two spaces apart; the last column is not padded. */
