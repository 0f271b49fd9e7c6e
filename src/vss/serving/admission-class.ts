/**
 * Which SimilaritySearch calls are heavy for admission control (src/platform/grpc/admission.ts):
 * heavy calls get their own small concurrency and queue, so a burst of large Searches never holds
 * the slots of small ones. The measure is the work a call asks for, not its bytes: a Search of 4
 * queries and page 100 is 200 bytes on the wire and 400 candidates to find and write.
 */
import { type AdmissionClass, classifyBySize } from '../../platform/grpc/index.js';

/** A Search asking for more candidates than this (queries × page size, all pages) is heavy. */
export const HEAVY_SEARCH_CANDIDATES = 200;
/** A GetEmbeddings or ScoreCandidates of more ids than this is heavy. */
export const HEAVY_LOOKUP_IDS = 1000;

const DEFAULT_PAGE_SIZE = 10;

export function classifySimilaritySearch(method: string, request: unknown): AdmissionClass {
  if (classifyBySize(method, request) === 'heavy') return 'heavy';
  const fields = request as { queries?: unknown[]; pageSize?: number; candidateIds?: unknown[] };
  if (method.endsWith('/Search') && Array.isArray(fields.queries)) {
    const page = fields.pageSize || DEFAULT_PAGE_SIZE;
    return fields.queries.length * page > HEAVY_SEARCH_CANDIDATES ? 'heavy' : 'light';
  }
  if (Array.isArray(fields.candidateIds))
    return fields.candidateIds.length > HEAVY_LOOKUP_IDS ? 'heavy' : 'light';
  return 'light';
}
