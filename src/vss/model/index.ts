/**
 * The vss domain rules that serving, the consumers and admin share: how a model version's
 * collection is named and how a variant's `vss_filter` decides membership.
 */
export { collectionName } from './collection-name.js';
export {
  type Attributes,
  compileMembership,
  isMember,
  type MembershipRule,
  membershipFlag,
  mergeAttributes,
} from './membership.js';
