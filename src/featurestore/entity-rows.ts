import { invalidArgument } from '../platform/errors.js';
import { encodeFeatureValue } from './feature-value.js';
import { encodeGroup } from './group-codec.js';
import type { EntityDefinition, FeatureGroupDefinition, FeatureRegistry } from './registry.js';
import type { FeatureStore, StoredRow } from './store.js';

/** A row of one entity as code builds it: key parts and values by group and feature name. */
export interface FeatureRowInput {
  /** Key part values, in the entity's key schema order. */
  readonly key: readonly string[];
  /**
   * Group → feature → value, in any form `encodeFeatureValue` takes (numbers, strings, arrays, typed
   * arrays' contents as arrays, encoded bytes). Only the listed groups are written; a listed group's
   * missing features take their defaults.
   */
  readonly values: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

/** The stored value of a group from per-feature value bytes (`undefined` → the feature's default). */
export function encodeGroupValues(
  group: FeatureGroupDefinition,
  values: readonly (Uint8Array | undefined)[],
): Uint8Array {
  return encodeGroup(group.features.map((feature, i) => values[i] ?? feature.defaultValue));
}

/** Checks and encodes one row; INVALID_ARGUMENT naming `field` and the offending group or feature. */
export function toStoredRow(entity: EntityDefinition, row: FeatureRowInput, field = 'row'): StoredRow {
  if (row.key.length !== entity.keys.length) {
    throw invalidArgument(
      `${field}.key: entity "${entity.name}" has ${entity.keys.length} key part(s) (${entity.keys.join(', ')}), got ${row.key.length}`,
      `${field}.key`,
    );
  }
  const groups = new Map<string, Uint8Array>();
  for (const [groupName, features] of Object.entries(row.values)) {
    const group = entity.groupsByName.get(groupName);
    if (!group) {
      throw invalidArgument(
        `${field}.values: "${groupName}" is not a feature group of "${entity.name}"`,
        field,
      );
    }
    const values = new Array<Uint8Array | undefined>(group.features.length);
    for (const [featureName, raw] of Object.entries(features)) {
      const feature = group.featuresByName.get(featureName);
      if (!feature) {
        throw invalidArgument(
          `${field}.values.${groupName}: "${featureName}" is not a feature of ${entity.name}/${groupName}`,
          field,
        );
      }
      values[feature.index] = encodeFeatureValue(feature, raw, `${field}.values.${groupName}.${featureName}`);
    }
    groups.set(groupName, encodeGroupValues(group, values));
  }
  return { key: row.key, groups };
}

/**
 * Encodes and writes rows of one entity. The TTL is `options.ttlMs`, else the entity's
 * `ttl_seconds`, else none.
 */
export async function writeFeatureRows(
  store: FeatureStore,
  registry: FeatureRegistry,
  entityName: string,
  rows: readonly FeatureRowInput[],
  options: { ttlMs?: number } = {},
): Promise<void> {
  const entity = registry.requireEntity(entityName);
  const stored = rows.map((row, i) => toStoredRow(entity, row, `rows[${i}]`));
  await store.write(entity.name, stored, { ttlMs: options.ttlMs ?? entityTtlMs(entity) });
}

export function entityTtlMs(entity: EntityDefinition): number | undefined {
  return entity.ttlSeconds === undefined ? undefined : entity.ttlSeconds * 1000;
}
