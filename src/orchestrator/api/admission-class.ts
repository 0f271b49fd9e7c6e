/**
 * Which Predict calls are heavy for admission control (src/platform/grpc/admission.ts): heavy calls
 * get their own small concurrency and queue, so requests of thousands of targets never hold the
 * slots of small ones. Requests large enough to be decoded in slices are heavy too.
 */
import { type AdmissionClass, classifyBySize } from '../../platform/grpc/index.js';

/** A Predict of more rows than this (targets + pairs + slates) is heavy. */
export const HEAVY_PREDICT_ROWS = 1000;

export function classifyPredict(method: string, request: unknown): AdmissionClass {
  if (classifyBySize(method, request) === 'heavy') return 'heavy';
  const { targets, pairs, slates } = request as {
    targets?: unknown[];
    pairs?: unknown[];
    slates?: unknown[];
  };
  const rows = (targets?.length ?? 0) + (pairs?.length ?? 0) + (slates?.length ?? 0);
  return rows > HEAVY_PREDICT_ROWS ? 'heavy' : 'light';
}
