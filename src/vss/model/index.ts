/**
 * The vss domain rules that serving, the consumers and admin share: how a model version's
 * collection is named, how a variant's `vss_filter` decides membership, and which cluster's vector
 * DB holds a variant's points.
 */

export { type AggregatorRows, changedRows } from './aggregator-rows.js';
export { attributeValue, numberFromText, typedAttributes } from './attribute-value.js';
export {
  ClusterVectorDbs,
  type ClusterVectorDbsOptions,
  type ClusterVersion,
  promotingVariants,
  variantCollections,
} from './cluster-vector-dbs.js';
export { collectionName } from './collection-name.js';
export {
  EXPIRES_AT_FIELD,
  embeddingTtlSeconds,
  expiryOf,
  isExpired,
  unexpiredFilter,
} from './embedding-expiry.js';
export { hnswOf, searchWidthOf } from './hnsw-params.js';
export type { LiveRecallFigures, LiveRecallSource } from './live-recall.js';
export {
  type Attributes,
  compileMembership,
  isMember,
  type MembershipRule,
  membershipFlag,
  mergeAttributes,
} from './membership.js';
export { type FlaggedVariant, membershipFlags, withoutFlags } from './point-payload.js';
