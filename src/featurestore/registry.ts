import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { DataType, dataTypeInfo, lookupDataType, defaultValue as zeroValue } from '../datatypes/index.js';
import { describeError, invalidArgument, isLatticeError, LatticeError } from '../platform/errors.js';
import { encodeFeatureValue, type FeatureType } from './feature-value.js';
import { type FeatureDocument, type RegistryDocument, registryDocumentSchema } from './registry-schema.js';

export type {
  EntityDocument,
  FeatureDocument,
  FeatureGroupDocument,
  RegistryDocument,
} from './registry-schema.js';

/** A typed feature of a feature group. */
export interface FeatureDefinition extends FeatureType {
  readonly name: string;
  /** Served for a missing value (and for unknown keys with `fillDefaults`). */
  readonly defaultValue: Uint8Array;
  /** Position within its group: the slot of its value in the stored group value. */
  readonly index: number;
}

/** Features stored and read together for one entity key. */
export interface FeatureGroupDefinition {
  readonly name: string;
  readonly features: readonly FeatureDefinition[];
  readonly featuresByName: ReadonlyMap<string, FeatureDefinition>;
}

/** An entity type: what its keys are made of and which feature groups it has. */
export interface EntityDefinition {
  readonly name: string;
  /** Names of the key parts, in order. */
  readonly keys: readonly string[];
  /** Rows expire this long after their last write; never when undefined. */
  readonly ttlSeconds: number | undefined;
  readonly groups: readonly FeatureGroupDefinition[];
  readonly groupsByName: ReadonlyMap<string, FeatureGroupDefinition>;
}

/**
 * The feature registry: entity → key schema → feature groups → typed features with defaults. Built
 * from a validated document (a file or code); immutable. Invalid documents are rejected with
 * INVALID_ARGUMENT listing every problem with its path, e.g.
 * `entities[0].feature_groups[1].features[2].data_type: unknown data type "FP33"`.
 */
export class FeatureRegistry {
  readonly entities: readonly EntityDefinition[];
  readonly #byName: ReadonlyMap<string, EntityDefinition>;
  readonly #document: RegistryDocument;

  private constructor(entities: EntityDefinition[], document: RegistryDocument) {
    this.entities = entities;
    this.#byName = new Map(entities.map((entity) => [entity.name, entity]));
    this.#document = document;
  }

  /** Validates `document` (as parsed from JSON/YAML, or built in code); `source` names it in errors. */
  static fromDocument(document: unknown, source = 'feature registry'): FeatureRegistry {
    const parsed = registryDocumentSchema.safeParse(document);
    if (!parsed.success) throw registryError(source, parsed.error.issues.map(describeIssue));
    const problems: string[] = [];
    const entities = buildEntities(parsed.data, problems);
    if (problems.length > 0) throw registryError(source, problems);
    return new FeatureRegistry(entities, structuredClone(parsed.data));
  }

  /** Reads a `.json`, `.yaml` or `.yml` registry file. */
  static fromFile(file: string): FeatureRegistry {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw invalidArgument(`feature registry ${file} cannot be read: ${describeError(err)}`, file);
    }
    let document: unknown;
    try {
      document = extname(file).toLowerCase() === '.json' ? JSON.parse(text) : parseYaml(text);
    } catch (err) {
      throw invalidArgument(`feature registry ${file} is not valid JSON/YAML: ${describeError(err)}`, file);
    }
    return FeatureRegistry.fromDocument(document, `feature registry ${file}`);
  }

  entity(name: string): EntityDefinition | undefined {
    return this.#byName.get(name);
  }

  /** The entity, or INVALID_ARGUMENT naming it and the known ones. */
  requireEntity(name: string, field = 'entity'): EntityDefinition {
    const entity = this.#byName.get(name);
    if (!entity) {
      throw invalidArgument(
        `unknown entity "${name}" (known: ${[...this.#byName.keys()].join(', ') || 'none'})`,
        field,
      );
    }
    return entity;
  }

  /**
   * This registry plus the entities of `document` (validated as `fromDocument` does; `source` names
   * it in errors). An entity already here must be defined identically: values stored under one
   * definition are unreadable under another, so a different definition is FAILED_PRECONDITION.
   */
  withEntities(
    document: unknown,
    source = 'feature registry',
  ): { registry: FeatureRegistry; added: string[]; unchanged: string[] } {
    const incoming = FeatureRegistry.fromDocument(document, source).toDocument().entities;
    const mine = new Map(this.#document.entities.map((entity) => [entity.name, entity]));
    const added: string[] = [];
    const unchanged: string[] = [];
    for (const entity of incoming) {
      const existing = mine.get(entity.name);
      if (existing === undefined) {
        added.push(entity.name);
        mine.set(entity.name, entity);
      } else if (canonicalJson(existing) === canonicalJson(entity)) unchanged.push(entity.name);
      else {
        throw new LatticeError(
          'FAILED_PRECONDITION',
          `entity "${entity.name}" is already registered with another definition (keys, groups, features or types differ); values stored under one cannot be read under the other: register it under a new name, or change the registry the server starts with`,
          { field: 'entities' },
        );
      }
    }
    if (added.length === 0) return { registry: this, added, unchanged };
    return {
      registry: FeatureRegistry.fromDocument({ entities: [...mine.values()] }, source),
      added,
      unchanged,
    };
  }

  /** The validated document this registry was built from (a copy), e.g. to write it to a file. */
  toDocument(): RegistryDocument {
    return structuredClone(this.#document);
  }
}

type ParsedRegistry = z.output<typeof registryDocumentSchema>;
type ParsedEntity = ParsedRegistry['entities'][number];

function buildEntities(document: ParsedRegistry, problems: string[]): EntityDefinition[] {
  const seen = new Set<string>();
  return document.entities.map((entity, e) => {
    const path = `entities[${e}]`;
    if (seen.has(entity.name)) problems.push(`${path}.name: duplicate entity "${entity.name}"`);
    seen.add(entity.name);
    const keys = new Set<string>();
    entity.keys.forEach((key, k) => {
      if (keys.has(key)) problems.push(`${path}.keys[${k}]: duplicate key "${key}"`);
      keys.add(key);
    });
    return buildEntity(entity, path, problems);
  });
}

function buildEntity(entity: ParsedEntity, path: string, problems: string[]): EntityDefinition {
  const groupsByName = new Map<string, FeatureGroupDefinition>();
  const groups = entity.feature_groups.map((group, g) => {
    const groupPath = `${path}.feature_groups[${g}]`;
    if (groupsByName.has(group.name)) {
      problems.push(`${groupPath}.name: duplicate feature group "${group.name}" in entity "${entity.name}"`);
    }
    const featuresByName = new Map<string, FeatureDefinition>();
    const features = group.features.map((feature, f) => {
      const featurePath = `${groupPath}.features[${f}]`;
      if (featuresByName.has(feature.name)) {
        problems.push(
          `${featurePath}.name: duplicate feature "${feature.name}" in ${entity.name}/${group.name}`,
        );
      }
      const definition = buildFeature(feature, f, featurePath, problems);
      featuresByName.set(feature.name, definition);
      return definition;
    });
    const definition: FeatureGroupDefinition = { name: group.name, features, featuresByName };
    groupsByName.set(group.name, definition);
    return definition;
  });
  return { name: entity.name, keys: entity.keys, ttlSeconds: entity.ttl_seconds, groups, groupsByName };
}

function buildFeature(
  feature: FeatureDocument,
  index: number,
  path: string,
  problems: string[],
): FeatureDefinition {
  const dataType = lookupDataType(feature.data_type);
  const vectorDim = feature.vector_dim ?? 0;
  // Stands in for an invalid feature so that validation goes on and reports every problem at once;
  // a registry with problems is never built.
  const broken = {
    name: feature.name,
    dataType: DataType.FP32,
    vectorDim: 0,
    defaultValue: zeroValue(DataType.FP32, 0),
    index,
  };
  if (dataType === undefined || dataType === DataType.UNSPECIFIED) {
    problems.push(`${path}.data_type: unknown data type "${feature.data_type}"`);
    return broken;
  }
  const info = dataTypeInfo(dataType);
  if (!info.isVector && vectorDim !== 0) {
    problems.push(`${path}.vector_dim: ${info.name} is a scalar type; vector_dim must be 0 or absent`);
    return broken;
  }
  if (dataType === DataType.BOOL_VECTOR && vectorDim === 0) {
    // Bit-packed: the byte length cannot tell 3 bools from 8, so the dimension must be fixed.
    problems.push(`${path}.vector_dim: BOOL_VECTOR needs a vector_dim ≥ 1`);
    return broken;
  }
  let defaultValue = zeroValue(dataType, vectorDim);
  if (feature.default !== undefined) {
    try {
      defaultValue =
        encodeFeatureValue({ dataType, vectorDim }, feature.default, `${path}.default`) ?? defaultValue;
    } catch (err) {
      if (!isLatticeError(err)) throw err;
      problems.push(err.message);
    }
  }
  return { name: feature.name, dataType, vectorDim, defaultValue, index };
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = formatPath(issue.path);
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => `${path ? `${path}.` : ''}${key}: unknown field`).join('\n  - ');
  }
  return `${path || '(top level)'}: ${issue.message}`;
}

function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`))
    .join('');
}

function registryError(source: string, problems: string[]): LatticeError {
  const field = /^([^:\s]+):/.exec(problems[0] ?? '')?.[1];
  return new LatticeError('INVALID_ARGUMENT', `invalid ${source}:\n  - ${problems.join('\n  - ')}`, {
    field,
  });
}

/** JSON with object keys sorted, so equal definitions compare equal whatever their key order. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
