/**
 * How a point's payload is built, for ingestion (consumers/embedding-processor.ts) and for promotion's copy
 * to another cluster (admin/operations/steps/promote-steps.ts), so both write the same point: the
 * attributes (event payload over the aggregator row: membership.ts) and, per variant whose
 * membership the collection carries, `to_be_indexed_<variant>` = raw index flag AND its vss_filter.
 */
import type { Payload } from '../../platform/vectordb/index.js';
import { isMember, type MembershipRule, membershipFlag } from './membership.js';

/** A variant whose membership flag a collection's points carry, with its compiled vss_filter. */
export interface FlaggedVariant {
  readonly name: string;
  readonly rule: MembershipRule;
}

/**
 * Each variant's membership flag. The raw index flag is the embedding-store row's (`raw`), else the
 * one the events sent, else (no row: expired, or never written) the point's current membership.
 */
export function membershipFlags(
  variants: readonly FlaggedVariant[],
  attributes: Payload,
  raw: Readonly<Record<string, boolean>> | undefined,
  sent: Readonly<Record<string, boolean>> | undefined,
  previous: Payload | undefined,
): Payload {
  const flags: Payload = {};
  for (const { name, rule } of variants) {
    const flag = raw?.[name] ?? sent?.[name] ?? previous?.[membershipFlag(name)] === true;
    flags[membershipFlag(name)] = isMember(rule, flag, attributes);
  }
  return flags;
}

/** The payload without the membership flags: the point's attributes. */
export function withoutFlags(payload: Payload): Payload {
  const copy: Payload = {};
  const prefix = membershipFlag('');
  for (const [key, value] of Object.entries(payload)) if (!key.startsWith(prefix)) copy[key] = value;
  return copy;
}
