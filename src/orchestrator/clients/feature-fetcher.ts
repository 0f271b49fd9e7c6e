/**
 * The port a FeatureComponent fetches through: the shape of the feature store's
 * `retrieve.FeatureService/RetrieveFeatures`, without the transport. The gRPC client and in-process
 * fakes implement it.
 */
export interface FeatureQuery {
  /** Feature store entity label, e.g. `catalog`. */
  entity: string;
  /** Names of the key parts, in order. */
  keysSchema: readonly string[];
  /** One tuple of key part values per entity to fetch, aligned with `keysSchema`. */
  keys: readonly (readonly string[])[];
  featureGroups: readonly { label: string; features: readonly string[] }[];
}

export interface FeatureCallOptions {
  /** The request's: calls sharing it are one caller's. */
  signal: AbortSignal;
  /** Epoch milliseconds: the request's deadline. */
  deadline: number;
  /** The call's own timeout (the component's `deadline_ms`) from when it is made; absent = `deadline` alone. */
  timeoutMs?: number;
}

/**
 * One row per key, in key order. A row holds one value per requested feature (groups in query order,
 * features in group order), encoded as the group's data type. `undefined` or an empty row means the
 * entity was not found: its cells take the feature defaults and its rows are marked.
 */
export type FeatureRows = readonly (readonly Uint8Array[] | undefined)[];

export interface FeatureFetcher {
  retrieve(query: FeatureQuery, options: FeatureCallOptions): Promise<FeatureRows>;
}
