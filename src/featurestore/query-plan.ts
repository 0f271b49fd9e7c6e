import { DataType, dataTypeInfo, lookupDataType } from '../datatypes/index.js';
import type { FeatureSchema, Query } from '../gen/retrieve/retrieve.js';
import { invalidArgument } from '../platform/errors.js';
import type { EntityDefinition, FeatureDefinition, FeatureRegistry } from './registry.js';

/** One column of the answer: a requested feature, in column_idx order. */
export interface PlannedColumn {
  readonly feature: FeatureDefinition;
  /** Position of the feature's group in `QueryPlan.groups` (the groups read from the store). */
  readonly groupSlot: number;
  /** The type served: the feature's own, or the one asked for with `name@TYPE`. */
  readonly outputType: DataType;
}

/** A validated query: what to read and where each value goes. */
export interface QueryPlan {
  readonly entity: EntityDefinition;
  /** Distinct feature groups to read, in order of first request. */
  readonly groups: readonly string[];
  readonly columns: readonly PlannedColumn[];
  readonly featureSchemas: FeatureSchema[];
  /** Key tuples in the entity's key order (the query's order may differ), aligned with `Query.keys`. */
  readonly keys: readonly (readonly string[])[];
}

export interface PlanOptions {
  /** Most keys one query may ask for (default 10,000). */
  maxKeys?: number;
}

/**
 * Checks a Query against the registry and fixes the answer's layout. `column_idx` runs over the
 * requested groups in query order × their requested features in query order, so `Row.columns[i]` is
 * the i-th requested feature overall; a group or feature asked twice gets a column each time.
 * `keys_schema` must name exactly the entity's key parts, in any order. Every problem is
 * INVALID_ARGUMENT naming the request field.
 */
export function planQuery(registry: FeatureRegistry, query: Query, options: PlanOptions = {}): QueryPlan {
  if (query.entityLabel === '') throw invalidArgument('entity_label is required', 'entity_label');
  const entity = registry.requireEntity(query.entityLabel, 'entity_label');
  if (query.featureGroups.length === 0) {
    throw invalidArgument('feature_groups: at least one feature group is required', 'feature_groups');
  }
  const groups: string[] = [];
  const columns: PlannedColumn[] = [];
  const featureSchemas: FeatureSchema[] = query.featureGroups.map((requested, g) => {
    const field = `feature_groups[${g}]`;
    const group = entity.groupsByName.get(requested.label);
    if (!group) {
      throw invalidArgument(
        `${field}.label: "${requested.label}" is not a feature group of entity "${entity.name}" (known: ${entity.groups.map((x) => x.name).join(', ')})`,
        `${field}.label`,
      );
    }
    if (requested.featureLabels.length === 0) {
      throw invalidArgument(
        `${field}.feature_labels: at least one feature is required`,
        `${field}.feature_labels`,
      );
    }
    let groupSlot = groups.indexOf(group.name);
    if (groupSlot < 0) groupSlot = groups.push(group.name) - 1;
    const features = requested.featureLabels.map((label, f) => {
      const featureField = `${field}.feature_labels[${f}]`;
      const at = label.indexOf('@');
      const name = at < 0 ? label : label.slice(0, at);
      const feature = group.featuresByName.get(name);
      if (!feature) {
        throw invalidArgument(
          `${featureField}: "${name}" is not a feature of ${entity.name}/${group.name}`,
          featureField,
        );
      }
      const outputType =
        at < 0 ? feature.dataType : conversionTarget(feature, label.slice(at + 1), featureField);
      columns.push({ feature, groupSlot, outputType });
      return { label, columnIdx: columns.length - 1 };
    });
    return { featureGroupLabel: requested.label, features };
  });
  return {
    entity,
    groups,
    columns,
    featureSchemas,
    keys: planKeys(entity, query, options.maxKeys ?? 10_000),
  };
}

/** `feature@TYPE`: numeric features convert to another numeric type of the same shape. */
function conversionTarget(feature: FeatureDefinition, typeName: string, field: string): DataType {
  const target = lookupDataType(typeName);
  if (target === undefined || target === DataType.UNSPECIFIED) {
    throw invalidArgument(`${field}: unknown data type "${typeName}"`, field);
  }
  const from = dataTypeInfo(feature.dataType);
  const to = dataTypeInfo(target);
  if (target !== feature.dataType && (!from.numeric || !to.numeric || from.isVector !== to.isVector)) {
    throw invalidArgument(
      `${field}: ${feature.name} is ${from.name} and cannot be served as ${to.name} (numeric types convert to numeric types of the same shape)`,
      field,
    );
  }
  return target;
}

function planKeys(entity: EntityDefinition, query: Query, maxKeys: number): (readonly string[])[] {
  const schema = query.keysSchema;
  const expected = entity.keys;
  const positions = expected.map((name) => schema.indexOf(name));
  if (schema.length !== expected.length || positions.includes(-1) || new Set(schema).size !== schema.length) {
    throw invalidArgument(
      `keys_schema: entity "${entity.name}" is keyed by (${expected.join(', ')}), got (${schema.join(', ')})`,
      'keys_schema',
    );
  }
  if (query.keys.length > maxKeys) {
    throw invalidArgument(`keys: at most ${maxKeys} keys per query, got ${query.keys.length}`, 'keys');
  }
  const inOrder = positions.every((position, i) => position === i);
  return query.keys.map((key, k) => {
    if (key.cols.length !== schema.length) {
      throw invalidArgument(
        `keys[${k}].cols: expected ${schema.length} key part(s) (${schema.join(', ')}), got ${key.cols.length}`,
        `keys[${k}].cols`,
      );
    }
    return inOrder ? key.cols : positions.map((position) => key.cols[position]!);
  });
}
