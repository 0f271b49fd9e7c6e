/**
 * featurestore.v1.FeatureWriterService: the storage port of a running feature store over gRPC, so
 * `lattice featurestore load` writes into the store `lattice up` serves without opening its data
 * directory. Every row is checked against the served registry before anything is stored: the
 * entity is registered, the key has the entity's key parts, each group exists and its value holds
 * one well-formed value per feature of the group.
 */
import { checkValueLength } from '../datatypes/index.js';
import type {
  DeleteRowsRequest,
  FeatureWriterServiceService,
  ReadRowsRequest,
  ReadRowsResponse,
  RegisterEntitiesRequest,
  RegisterEntitiesResponse,
  RowKey,
  WriteRowsRequest,
  WriteRowsResponse,
} from '../gen/featurestore/v1/writer.js';
import { describeError, invalidArgument, isLatticeError } from '../platform/errors.js';
import type { UnaryHandlers } from '../platform/grpc/index.js';
import { decodeGroup } from './group-codec.js';
import type { EntityDefinition } from './registry.js';
import type { ServedRegistry } from './served-registry.js';
import type { FeatureStore, StoredRow } from './store.js';

/** Most rows or keys one call may carry (a load sends batches well below it). */
export const MAX_ROWS_PER_CALL = 10_000;

export function featureWriterHandlers(
  registry: ServedRegistry,
  store: FeatureStore,
): UnaryHandlers<typeof FeatureWriterServiceService> {
  return {
    registerEntities: async (request: RegisterEntitiesRequest): Promise<RegisterEntitiesResponse> => {
      let document: unknown;
      try {
        document = JSON.parse(request.registryJson);
      } catch (err) {
        throw invalidArgument(`registry_json is not JSON: ${describeError(err)}`, 'registry_json');
      }
      return registry.register(document, 'registry_json');
    },
    writeRows: async (request: WriteRowsRequest): Promise<WriteRowsResponse> => {
      const entity = registry.current.requireEntity(request.entity);
      checkCount(request.rows.length, 'rows');
      const rows: StoredRow[] = request.rows.map((row, r) => ({
        key: keyOf(entity, row.key, `rows[${r}].key`),
        groups: new Map(
          Object.entries(row.groups).map(([name, value]) => [
            name,
            checkGroup(entity, name, value, `rows[${r}].groups["${name}"]`),
          ]),
        ),
      }));
      const ttlMs = Number(request.ttlMs);
      await store.write(entity.name, rows, ttlMs > 0 ? { ttlMs } : {});
      return { written: rows.length };
    },
    readRows: async (request: ReadRowsRequest): Promise<ReadRowsResponse> => {
      const entity = registry.current.requireEntity(request.entity);
      checkCount(request.keys.length, 'keys');
      request.groups.forEach((group, g) => {
        if (!entity.groupsByName.has(group)) throw unknownGroup(entity, group, `groups[${g}]`);
      });
      const keys = request.keys.map((key, k) => keyOf(entity, key, `keys[${k}]`));
      const found = await store.read(entity.name, keys, request.groups);
      return {
        rows: found.map((values) => ({
          values: values.map((value) => value ?? new Uint8Array()),
          present: values.map((value) => value !== undefined),
        })),
      };
    },
    deleteRows: async (request: DeleteRowsRequest) => {
      const entity = registry.current.requireEntity(request.entity);
      checkCount(request.keys.length, 'keys');
      await store.delete(
        entity.name,
        request.keys.map((key, k) => keyOf(entity, key, `keys[${k}]`)),
      );
      return {};
    },
  };
}

function checkCount(count: number, field: string): void {
  if (count > MAX_ROWS_PER_CALL) {
    throw invalidArgument(
      `${field}: ${count} entries exceed the limit of ${MAX_ROWS_PER_CALL} per call`,
      field,
    );
  }
}

function keyOf(entity: EntityDefinition, key: RowKey | undefined, field: string): string[] {
  const parts = key?.parts ?? [];
  if (parts.length !== entity.keys.length) {
    throw invalidArgument(
      `${field}: ${parts.length} key parts, but entity "${entity.name}" is keyed by ${entity.keys.length} (${entity.keys.join(', ')})`,
      field,
    );
  }
  return parts;
}

function unknownGroup(entity: EntityDefinition, group: string, field: string) {
  return invalidArgument(
    `${field}: entity "${entity.name}" has no feature group "${group.slice(0, 64)}" (known: ${entity.groups.map((g) => g.name).join(', ')})`,
    field,
  );
}

/** The group's stored value, checked to hold one well-formed value per feature of the group. */
function checkGroup(entity: EntityDefinition, name: string, value: Uint8Array, field: string): Uint8Array {
  const group = entity.groupsByName.get(name);
  if (group === undefined) throw unknownGroup(entity, name, field);
  try {
    const values = decodeGroup(value, group.features.length, field);
    group.features.forEach((feature, f) => {
      const bytes = values[f];
      if (bytes === undefined)
        throw invalidArgument(`${field}: no value for feature "${feature.name}"`, field);
      checkValueLength(feature.dataType, feature.vectorDim, bytes, `${field}.${feature.name}`);
    });
  } catch (err) {
    // A malformed blob is INTERNAL when read from a store; sent by a caller it is a bad request.
    if (isLatticeError(err) && err.code !== 'INVALID_ARGUMENT') throw invalidArgument(err.message, field);
    throw err;
  }
  return value;
}
