/**
 * The FeatureStore port over a running feature store's FeatureWriterService: what `lattice
 * featurestore load` writes through when the store is the one `lattice up` (or `lattice featurestore
 * serve`) serves. Rows are sent as the store keeps them; the server checks them against its registry,
 * so `registerEntities` must have sent the entity's definition first.
 */
import type { ServiceError, status } from '@grpc/grpc-js';
import {
  type DeleteRowsRequest,
  type DeleteRowsResponse,
  FeatureWriterServiceClient,
  type ReadRowsRequest,
  type ReadRowsResponse,
  type RegisterEntitiesRequest,
  type RegisterEntitiesResponse,
  type WriteRowsRequest,
  type WriteRowsResponse,
} from '../gen/featurestore/v1/writer.js';
import { type ErrorCode, LatticeError } from '../platform/errors.js';
import { dialTarget, grpcStatusOf } from '../platform/grpc/index.js';
import type { ClientTls } from '../platform/http/index.js';
import type { RegistryDocument } from './registry-schema.js';
import type { FeatureStore, StoredRow, WriteOptions } from './store.js';

const codeOf = new Map<status, ErrorCode>(
  Object.entries(grpcStatusOf).map(([code, grpc]) => [grpc, code as ErrorCode]),
);

/** Rows per WriteRows call: well below the server's MAX_ROWS_PER_CALL. */
const ROWS_PER_CALL = 1_000;
/** About this many bytes per call, far below gRPC's default 4 MiB receive limit of most servers. */
const BYTES_PER_CALL = 2 * 1024 * 1024;

export interface RemoteFeatureStoreOptions {
  /** `host:port`, or `https://host:port`. */
  address: string;
  tls?: ClientTls | boolean;
  /** Milliseconds each call may take (default 30,000). */
  deadlineMs?: number;
}

export class RemoteFeatureStore implements FeatureStore {
  readonly #client: FeatureWriterServiceClient;
  readonly #address: string;
  readonly #deadlineMs: number;
  #closed = false;

  constructor(options: RemoteFeatureStoreOptions) {
    const { target, credentials } = dialTarget(options.address, options.tls);
    this.#client = new FeatureWriterServiceClient(target, credentials);
    this.#address = options.address;
    this.#deadlineMs = options.deadlineMs ?? 30_000;
  }

  /** Adds the document's entities to the served registry (identical ones are left as they are). */
  registerEntities(document: RegistryDocument): Promise<RegisterEntitiesResponse> {
    return this.#call('registerEntities', { registryJson: JSON.stringify(document) });
  }

  /** Sends the rows in calls of at most ROWS_PER_CALL rows and about BYTES_PER_CALL bytes, in order. */
  async write(entity: string, rows: readonly StoredRow[], options: WriteOptions = {}): Promise<void> {
    const ttlMs = BigInt(Math.ceil(options.ttlMs ?? 0));
    let batch: WriteRowsRequest['rows'] = [];
    let bytes = 0;
    const send = async () => {
      if (batch.length > 0) await this.#call('writeRows', { entity, rows: batch, ttlMs });
      batch = [];
      bytes = 0;
    };
    for (const row of rows) {
      batch.push({ key: { parts: [...row.key] }, groups: Object.fromEntries(row.groups) });
      for (const part of row.key) bytes += part.length + 2;
      for (const [group, value] of row.groups) bytes += group.length + value.length + 8;
      if (batch.length >= ROWS_PER_CALL || bytes >= BYTES_PER_CALL) await send();
    }
    await send();
  }

  async read(
    entity: string,
    keys: readonly (readonly string[])[],
    groups: readonly string[],
  ): Promise<(Uint8Array | undefined)[][]> {
    const answer = await this.#call('readRows', {
      entity,
      keys: keys.map((key) => ({ parts: [...key] })),
      groups: [...groups],
    });
    return answer.rows.map((row) => row.values.map((value, g) => (row.present[g] ? value : undefined)));
  }

  async delete(entity: string, keys: readonly (readonly string[])[]): Promise<void> {
    await this.#call('deleteRows', { entity, keys: keys.map((key) => ({ parts: [...key] })) });
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#client.close();
  }

  #call<M extends keyof Calls>(method: M, request: Calls[M][0]): Promise<Calls[M][1]> {
    if (this.#closed)
      return Promise.reject(new LatticeError('UNAVAILABLE', 'the feature store client is closed'));
    return new Promise((resolve, reject) => {
      const callback = (err: ServiceError | null, answer: Calls[M][1]) => {
        if (!err) return resolve(answer);
        const code = codeOf.get(err.code) ?? 'INTERNAL';
        reject(
          new LatticeError(
            code,
            code === 'UNAVAILABLE'
              ? `no feature store answers at ${this.#address} (${err.details}): start "lattice up" or "lattice featurestore serve", or point --address at one`
              : err.details,
          ),
        );
      };
      const call = this.#client[method] as unknown as (
        request: unknown,
        options: { deadline: number },
        callback: (err: ServiceError | null, answer: Calls[M][1]) => void,
      ) => unknown;
      call.call(this.#client, request, { deadline: Date.now() + this.#deadlineMs }, callback);
    });
  }
}

/** Each method's request and response. */
interface Calls {
  registerEntities: [RegisterEntitiesRequest, RegisterEntitiesResponse];
  writeRows: [WriteRowsRequest, WriteRowsResponse];
  readRows: [ReadRowsRequest, ReadRowsResponse];
  deleteRows: [DeleteRowsRequest, DeleteRowsResponse];
}
