import { DataType, dataTypeInfo, lookupDataType } from '../../datatypes/data-type.js';
import type { ColumnSpec } from '../matrix/component-matrix.js';
import type { RetrievalConfig, RetrieverConfig } from './retrieval-schema.js';
import type { ModelConfig } from './schema.js';

type Problem = (path: string, message: string) => void;

/** `host:port` (a name or an IPv4/IPv6 address), or a gRPC URI such as `dns:///host:port`. */
const ADDRESS = /^(?:(?:dns|ipv4|ipv6|unix):\S+|\[[0-9a-fA-F:.]+\]:\d{1,5}|[A-Za-z0-9.-]+:\d{1,5})$/;

/** The column of a retriever's score: `score_column`, default `<name>_score`. */
export const retrieverScoreColumn = (r: RetrieverConfig): string => r.score_column ?? `${r.name}_score`;

/** The column of a retriever's attribute: its `column`, default its name. */
export const attributeColumn = (a: { name: string; column?: string }): string => a.column ?? a.name;

/**
 * The feature group and feature of a `feature_store_vector` query: its column
 * `<entity>:<group>:<feature>`, whose entity must be the query's; undefined when it is not that.
 */
export function featureStoreFeature(source: {
  entity: string;
  column: string;
}): { group: string; feature: string } | undefined {
  const parts = source.column.split(':');
  if (parts.length !== 3 || parts[0] !== source.entity || !parts[1] || !parts[2]) return undefined;
  return { group: parts[1], feature: parts[2] };
}

/** The type of a `feature_store_vector`'s `data_type`: a float vector type, else undefined. */
export function queryVectorType(name: string): DataType | undefined {
  const type = lookupDataType(name);
  if (type === undefined) return undefined;
  const info = dataTypeInfo(type);
  return info.isVector && info.kind === 'float' ? type : undefined;
}

/** The matrix type of an attribute's `data_type` (`BYTES` is STRING); undefined when unknown or a vector. */
export function attributeType(name: string): DataType | undefined {
  const type = name.trim().toUpperCase() === 'BYTES' ? DataType.STRING : lookupDataType(name);
  return type === undefined || dataTypeInfo(type).isVector ? undefined : type;
}

/**
 * Checks `retrieval` and returns the target columns it supplies (the merged score, each retriever's
 * score, the attributes): the rest of the DAG reads them as request columns. Problems carry their
 * JSON paths: duplicate retriever names, a bad address, a query that is not exactly one form, a
 * quota above k, an unknown attribute type, two retrievers filling one column.
 */
export function checkRetrieval(retrieval: RetrievalConfig, problem: Problem): ColumnSpec[] {
  const columns = new Map<string, { spec: ColumnSpec; path: string }>();
  const supply = (spec: ColumnSpec, path: string) => {
    const existing = columns.get(spec.name);
    if (existing) problem(path, `column "${spec.name}" is already filled by ${existing.path}`);
    else columns.set(spec.name, { spec, path });
  };
  supply({ name: retrieval.score_column, dataType: DataType.FP32, vectorDim: 0 }, 'retrieval.score_column');
  const names = new Map<string, number>();
  retrieval.retrievers.forEach((r, i) => {
    const p = `retrieval.retrievers[${i}]`;
    const first = names.get(r.name);
    if (first !== undefined)
      problem(`${p}.name`, `retriever "${r.name}" is already defined at retrieval.retrievers[${first}]`);
    else names.set(r.name, i);
    if (!ADDRESS.test(r.target))
      problem(`${p}.target`, `"${r.target}" is not a gRPC address (host:port, or dns:///host:port)`);
    const forms = [
      r.query.context_feature,
      r.query.candidate_id_from,
      r.query.entity_embedding,
      r.query.feature_store_vector,
    ].filter((f) => f !== undefined).length;
    if (forms !== 1)
      problem(
        `${p}.query`,
        'set exactly one of context_feature, candidate_id_from, entity_embedding or feature_store_vector',
      );
    const fsVector = r.query.feature_store_vector;
    if (fsVector !== undefined && featureStoreFeature(fsVector) === undefined)
      problem(
        `${p}.query.feature_store_vector.column`,
        `"${fsVector.column}" is not ${fsVector.entity}:<group>:<feature>`,
      );
    if (fsVector !== undefined && queryVectorType(fsVector.data_type) === undefined)
      problem(
        `${p}.query.feature_store_vector.data_type`,
        `"${fsVector.data_type}" is not a float vector type (FP32_VECTOR, FP16_VECTOR, FP64_VECTOR, FP8E5M2_VECTOR, FP8E4M3_VECTOR)`,
      );
    if (r.quota !== undefined && r.quota > r.k)
      problem(`${p}.quota`, `quota ${r.quota} is more than the ${r.k} candidates asked (k)`);
    r.filters.forEach((f, j) => {
      const noValues = f.op === 'exists' || f.op === 'not_exists';
      if (!noValues && f.values.length === 0 && f.values_from === undefined)
        problem(`${p}.filters[${j}]`, `op "${f.op}" needs values or values_from`);
    });
    supply({ name: retrieverScoreColumn(r), dataType: DataType.FP32, vectorDim: 0 }, `${p}.score_column`);
    r.attributes.forEach((a, j) => {
      const type = attributeType(a.data_type);
      if (type === undefined) {
        problem(`${p}.attributes[${j}].data_type`, `"${a.data_type}" is not a known scalar data type`);
        return;
      }
      supply({ name: attributeColumn(a), dataType: type, vectorDim: 0 }, `${p}.attributes[${j}]`);
    });
  });
  return [...columns.values()].map((c) => c.spec);
}

/**
 * Checks `response.sort_by` and `limit`, and what a retrieval config's answer needs: the sort column
 * is a response column holding scalar numbers in the target matrix.
 */
export function checkResponseOrder(
  config: ModelConfig,
  typeOf: (column: string) => { spec: ColumnSpec; slate: boolean } | undefined,
  problem: Problem,
): void {
  const { response } = config;
  if (response.sort_by !== undefined) {
    const column = response.sort_by.column;
    const known = typeOf(column);
    if (!response.columns.includes(column))
      problem('response.sort_by.column', `"${column}" is not one of response.columns`);
    else if (known?.slate)
      problem('response.sort_by.column', `"${column}" is a slate column; sort_by orders target rows`);
    else if (known !== undefined) {
      const info = dataTypeInfo(known.spec.dataType);
      if (!info.numeric || info.isVector)
        problem('response.sort_by.column', `"${column}" holds ${info.name} values, not scalar numbers`);
    }
  }
}
