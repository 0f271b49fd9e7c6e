import { Metadata } from '@grpc/grpc-js';
import { FeatureServiceService, type Query, type Result } from '../../gen/retrieve/retrieve.js';
import { LatticeError } from '../../platform/errors.js';
import type { CallPolicy } from './call-policy.js';
import type { CallTarget } from './call-target.js';
import type { FeatureCallOptions, FeatureFetcher, FeatureQuery, FeatureRows } from './feature-fetcher.js';

export interface FeatureStoreClientOptions {
  /** The feature store, `host:port`. */
  target: string;
  policy: CallPolicy;
  /** Sent as `idHeader` / `tokenHeader` metadata when set. */
  callerId?: string;
  callerToken?: string;
  /** Default `caller-id`. */
  idHeader?: string;
  /** Default `caller-token`. */
  tokenHeader?: string;
}

/**
 * FeatureFetcher over `retrieve.FeatureService/RetrieveFeatures`. The store answers one row per key
 * in key order; the client checks that (a row count, key or value count that does not match is an
 * error failing the whole call, since values on the wrong entity or feature are worse than none) and
 * turns a row without columns into `undefined` (entity not found).
 */
export class FeatureStoreClient implements FeatureFetcher {
  private readonly target: string;
  private readonly policy: CallPolicy;
  private readonly metadata = new Metadata();
  private readonly call: CallTarget;

  constructor(options: FeatureStoreClientOptions) {
    this.target = options.target;
    this.policy = options.policy;
    this.call = { service: 'feature_store', target: this.target, method: 'RetrieveFeatures' };
    if (options.callerId !== undefined)
      this.metadata.set((options.idHeader ?? 'caller-id').toLowerCase(), options.callerId);
    if (options.callerToken !== undefined)
      this.metadata.set((options.tokenHeader ?? 'caller-token').toLowerCase(), options.callerToken);
  }

  async retrieve(query: FeatureQuery, options: FeatureCallOptions): Promise<FeatureRows> {
    // The request only reads the query's arrays while it is encoded, so they are shared, not copied
    // (the generated types are mutable only for the decoder's sake).
    const request: Query = {
      entityLabel: query.entity,
      featureGroups: query.featureGroups.map((g) => ({
        label: g.label,
        featureLabels: g.features as string[],
      })),
      keysSchema: query.keysSchema as string[],
      keys: query.keys.map((cols) => ({ cols: cols as string[] })),
    };
    return this.policy.unary(
      this.call,
      FeatureServiceService.retrieveFeatures,
      request,
      {
        signal: options.signal,
        deadline: options.deadline,
        timeoutMs: options.timeoutMs,
        metadata: this.metadata,
      },
      (result) => this.rows(query, result),
    );
  }

  private rows(query: FeatureQuery, result: Result): FeatureRows {
    const where = `feature store ${this.target}: entity ${query.entity}`;
    if (result.rows.length !== query.keys.length) {
      throw new LatticeError(
        'INTERNAL',
        `${where}: ${result.rows.length} rows returned for ${query.keys.length} keys`,
      );
    }
    const features = requestedFeatures(query);
    return result.rows.map((row, i) => {
      const key = query.keys[i]!;
      // Servers echo the key parts; when they do, a different key means rows out of order.
      if (row.keys.length > 0 && !sameKey(row.keys, key)) {
        throw new LatticeError(
          'INTERNAL',
          `${where}: row ${i} is for key ${row.keys.join('|')}, expected ${key.join('|')}`,
        );
      }
      if (row.columns.length === 0) return undefined;
      // Values are matched to features by position: any other count would shift them.
      if (row.columns.length !== features) {
        throw new LatticeError(
          'INTERNAL',
          `${where}: row ${i} (key ${key.join('|')}) has ${row.columns.length} values for ${features} requested features`,
        );
      }
      return row.columns;
    });
  }
}

/** How many values a found row holds: one per feature of every requested group. */
function requestedFeatures(query: Pick<FeatureQuery, 'featureGroups'>): number {
  let count = 0;
  for (const group of query.featureGroups) count += group.features.length;
  return count;
}

function sameKey(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
