import { invalidArgument } from '../platform/errors.js';
import type { CsvRecord } from './csv-records.js';
import { encodeGroupValues } from './entity-rows.js';
import { encodeFeatureValue } from './feature-value.js';
import type { EntityDefinition, FeatureDefinition } from './registry.js';
import type { StoredRow } from './store.js';

/** What a column of an input file holds: a key part, or a feature of a group. */
export type ColumnTarget =
  | { kind: 'key'; part: number; name: string }
  | { kind: 'feature'; groupSlot: number; feature: FeatureDefinition; name: string };

/**
 * Maps column names to key parts and features. A column is named after a key part (`user_id`), a
 * feature as `group:feature` (also `entity:group:feature`), or a bare `feature` when exactly one
 * group of the entity has a feature of that name. Key part names win over bare feature names.
 */
export class ColumnResolver {
  readonly #entity: EntityDefinition;
  readonly #cache = new Map<string, ColumnTarget | string>();

  constructor(entity: EntityDefinition) {
    this.#entity = entity;
  }

  /** The column's target, or a reason why the name means nothing (or too much). */
  resolve(column: string): ColumnTarget | string {
    let target = this.#cache.get(column);
    if (target === undefined) {
      target = this.#resolve(column.trim());
      this.#cache.set(column, target);
    }
    return target;
  }

  #resolve(name: string): ColumnTarget | string {
    const entity = this.#entity;
    const part = entity.keys.indexOf(name);
    if (part >= 0) return { kind: 'key', part, name };
    const pieces = name.split(':');
    if (pieces.length === 3 && pieces[0] === entity.name) pieces.shift();
    if (pieces.length === 2) {
      const [groupName, featureName] = pieces as [string, string];
      const groupSlot = entity.groups.findIndex((group) => group.name === groupName);
      if (groupSlot < 0) return `column "${name}": "${groupName}" is not a feature group of "${entity.name}"`;
      const feature = entity.groups[groupSlot]!.featuresByName.get(featureName);
      if (!feature)
        return `column "${name}": "${featureName}" is not a feature of ${entity.name}/${groupName}`;
      return { kind: 'feature', groupSlot, feature, name };
    }
    if (pieces.length !== 1) return `column "${name}" is neither a key of "${entity.name}" nor group:feature`;
    const matches = entity.groups.flatMap((group, groupSlot) => {
      const feature = group.featuresByName.get(name);
      return feature ? [{ kind: 'feature' as const, groupSlot, feature, name }] : [];
    });
    if (matches.length === 1) return matches[0]!;
    if (matches.length === 0) {
      return `column "${name}" is neither a key (${entity.keys.join(', ')}) nor a feature of "${entity.name}"`;
    }
    const groups = matches.map((match) => `${entity.groups[match.groupSlot]!.name}:${name}`);
    return `column "${name}" is ambiguous: name it ${groups.join(' or ')}`;
  }
}

/** Collects one row's key parts and feature values, then encodes the groups it touched. */
export class RowBuilder {
  readonly #entity: EntityDefinition;
  #key: (string | undefined)[] = [];
  #groups: ((Uint8Array | undefined)[] | undefined)[] = [];

  constructor(entity: EntityDefinition) {
    this.#entity = entity;
    this.reset();
  }

  reset(): void {
    this.#key = new Array(this.#entity.keys.length).fill(undefined);
    this.#groups = new Array(this.#entity.groups.length).fill(undefined);
  }

  setKey(target: Extract<ColumnTarget, { kind: 'key' }>, raw: unknown): void {
    let value: string;
    if (typeof raw === 'string') value = raw;
    else if ((typeof raw === 'number' && Number.isFinite(raw)) || typeof raw === 'bigint')
      value = String(raw);
    else if (raw === null || raw === undefined) value = '';
    else throw invalidArgument(`key column ${target.name}: expected text or a number`, target.name);
    if (value === '') throw invalidArgument(`key column ${target.name} is empty`, target.name);
    this.#key[target.part] = value;
  }

  /**
   * Marks the feature's group as written; `raw` null/undefined takes the default, and so does empty
   * text when `emptyIsMissing` (CSV cells, which cannot tell an empty value from none).
   */
  setFeature(target: Extract<ColumnTarget, { kind: 'feature' }>, raw: unknown, emptyIsMissing = false): void {
    const group = this.#entity.groups[target.groupSlot]!;
    let values = this.#groups[target.groupSlot];
    if (values === undefined) {
      values = new Array(group.features.length).fill(undefined);
      this.#groups[target.groupSlot] = values;
    }
    if (emptyIsMissing && raw === '') return;
    values[target.feature.index] = encodeFeatureValue(target.feature, raw, target.name);
  }

  build(): StoredRow {
    const missing = this.#entity.keys.filter((_, i) => this.#key[i] === undefined);
    if (missing.length > 0) throw invalidArgument(`missing key column(s) ${missing.join(', ')}`, missing[0]);
    const groups = new Map<string, Uint8Array>();
    this.#groups.forEach((values, slot) => {
      if (values === undefined) return;
      const group = this.#entity.groups[slot]!;
      groups.set(group.name, encodeGroupValues(group, values));
    });
    if (groups.size === 0) throw invalidArgument('the row has no feature values');
    return { key: this.#key as string[], groups };
  }
}

/** Decodes CSV records after `header`; throws (for the whole file) on unknown, ambiguous or missing columns. */
export function csvRowDecoder(
  entity: EntityDefinition,
  header: readonly string[],
): (record: CsvRecord) => StoredRow {
  const resolver = new ColumnResolver(entity);
  const targets = resolveAll(entity, resolver, header);
  const builder = new RowBuilder(entity);
  return (record) => {
    if (record.error !== undefined) throw invalidArgument(record.error);
    if (record.fields.length !== targets.length) {
      throw invalidArgument(`expected ${targets.length} fields, got ${record.fields.length}`);
    }
    builder.reset();
    for (let i = 0; i < targets.length; i++) {
      const target = targets[i]!;
      if (target.kind === 'key') builder.setKey(target, record.fields[i]);
      else builder.setFeature(target, record.fields[i], true);
    }
    return builder.build();
  };
}

/**
 * Decodes objects (JSON Lines, Parquet rows) by their property names. With `columns` (Parquet, whose
 * schema is known up front) the names are checked once for the whole file; otherwise an unknown
 * property makes that row bad.
 */
export function objectRowDecoder(
  entity: EntityDefinition,
  columns?: readonly string[],
): (record: unknown) => StoredRow {
  const resolver = new ColumnResolver(entity);
  if (columns) resolveAll(entity, resolver, columns);
  const builder = new RowBuilder(entity);
  return (record) => {
    if (typeof record !== 'object' || record === null || Array.isArray(record)) {
      throw invalidArgument('expected a JSON object');
    }
    builder.reset();
    for (const [name, raw] of Object.entries(record)) {
      const target = resolver.resolve(name);
      if (typeof target === 'string') throw invalidArgument(target);
      if (target.kind === 'key') builder.setKey(target, raw);
      else builder.setFeature(target, raw);
    }
    return builder.build();
  };
}

function resolveAll(
  entity: EntityDefinition,
  resolver: ColumnResolver,
  names: readonly string[],
): ColumnTarget[] {
  const seen = new Map<string, string>();
  const targets = names.map((name) => {
    const target = resolver.resolve(name);
    if (typeof target === 'string') throw invalidArgument(target, name);
    const id = target.kind === 'key' ? `key ${target.part}` : `${target.groupSlot}:${target.feature.name}`;
    const previous = seen.get(id);
    if (previous !== undefined)
      throw invalidArgument(
        `columns "${previous}" and "${name}" name the same ${target.kind === 'key' ? 'key part' : 'feature'}`,
        name,
      );
    seen.set(id, name);
    return target;
  });
  const missing = entity.keys.filter((_, part) => !targets.some((t) => t.kind === 'key' && t.part === part));
  if (missing.length > 0) {
    throw invalidArgument(
      `missing key column(s) ${missing.join(', ')} (entity "${entity.name}" is keyed by ${entity.keys.join(', ')})`,
      missing[0],
    );
  }
  if (!targets.some((t) => t.kind === 'feature')) throw invalidArgument('no feature columns');
  return targets;
}
