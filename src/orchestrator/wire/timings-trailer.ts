/**
 * Per-request component timings on the wire (issue 39: the predict playground shows them): a caller
 * sends the metadata `lattice-timings: 1` with a Predict or legacy call, and the orchestrator answers
 * the trailer `lattice-timings`, a small JSON document, with the response or the error. The response
 * messages stay as they are, so every existing client is unaffected.
 *
 *   {"total_ms":4.182,"components":[
 *     {"name":"feature_init","kind":"feature_init","start_ms":0,"duration_ms":0.41,"state":"ran"}, …]}
 */
import type { Metadata } from '@grpc/grpc-js';

/** The request metadata that asks, and the trailer that answers (gRPC keys are lower case). */
export const TIMINGS_KEY = 'lattice-timings';

/** Values of `lattice-timings` that ask for timings; anything else (`0`, `false`, empty) does not. */
const ASKING = new Set(['1', 'true', 'yes', 'on']);

/**
 * Longest trailer sent: clients refuse metadata past 8 KiB in all (grpc-js's and grpc-core's default
 * `max_metadata_size`), the status and other trailers included.
 */
export const MAX_TIMINGS_BYTES = 6 * 1024;

export type TimingState = 'ran' | 'failed' | 'skipped' | 'cancelled';

export interface ComponentTimingJson {
  name: string;
  /** `feature_init`, `feature`, `model` or `compute`. */
  kind: string;
  /** From the start of the request, in ms. */
  start_ms: number;
  duration_ms: number;
  /** `ran`; `failed`; `skipped`, never started (the request ended first); `cancelled`, running when it ended. */
  state: TimingState;
}

export interface RequestTimings {
  /** From the start of the request to the end of its DAG, in ms. */
  total_ms: number;
  /** In topological order. */
  components: ComponentTimingJson[];
  /** How many components were left out at the end to keep the trailer under MAX_TIMINGS_BYTES. */
  omitted?: number;
}

/** Whether a call's metadata asks for timings. Reads one key: no allocation worth the name otherwise. */
export function timingsAsked(metadata: Metadata): boolean {
  const value = metadata.get(TIMINGS_KEY)[0];
  return typeof value === 'string' && ASKING.has(value.trim().toLowerCase());
}

/** Milliseconds to the microsecond: enough for a timing, and a short trailer. */
const ms = (value: number): number => Math.max(0, Math.round(value * 1000) / 1000);

/** The trailer's value: JSON in printable ASCII (metadata allows nothing else), at most MAX_TIMINGS_BYTES. */
export function encodeTimings(
  totalMs: number,
  components: readonly {
    name: string;
    kind?: string;
    startMs: number;
    durationMs: number;
    state: TimingState;
  }[],
): string {
  const timings: RequestTimings = {
    total_ms: ms(totalMs),
    components: components.map((c) => ({
      name: c.name,
      kind: c.kind ?? '',
      start_ms: ms(c.startMs),
      duration_ms: ms(c.durationMs),
      state: c.state,
    })),
  };
  let text = asciiJson(timings);
  const all = timings.components.length;
  while (text.length > MAX_TIMINGS_BYTES && timings.components.length > 0) {
    // Drop a share at a time: a DAG of thousands of nodes is not measured by re-encoding it thousands of times.
    timings.components.length = Math.floor(timings.components.length * 0.9);
    timings.omitted = all - timings.components.length;
    text = asciiJson(timings);
  }
  return text;
}

function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** The trailer a client received, or undefined when there is none (the server did not measure). */
export function timingsOf(trailers: Metadata | undefined): RequestTimings | undefined {
  const value = trailers?.get(TIMINGS_KEY)[0];
  if (typeof value !== 'string') return undefined;
  return JSON.parse(value) as RequestTimings;
}
