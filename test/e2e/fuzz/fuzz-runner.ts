/**
 * Sends generated requests to one RPC as raw bytes (a pass-through serializer, so byte-level
 * mutations reach the server as they are), checks every answer against what its case allows, and
 * every `checkEvery` requests, and at the end, runs the service's known-good request.
 *
 * An answer is a failure when: it is INTERNAL or UNKNOWN (never documented for a bad request); its
 * status is not one the case allows; it is an error without a message; or it is INVALID_ARGUMENT
 * that names no field (no `field` trailer, and a message naming none of the request's fields) or
 * names another field than the case broke.
 */
import { Client, credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { BYTE_MUTATIONS } from './byte-mutations.js';
import { Random } from './random.js';

/** What a generated request may be answered with. */
export interface Expectation {
  codes: readonly status[];
  /** For INVALID_ARGUMENT: the field (the `field` trailer, else the message) must match. */
  field?: RegExp;
}

export interface FuzzCase {
  bytes: Uint8Array;
  /** The mutation(s) applied, for reports: `kind: detail`. */
  summary: string;
  expect: Expectation;
}

/** One RPC to fuzz: how to make a valid request and its structurally wrong variants. */
export interface FuzzRpc {
  service: string;
  /** gRPC method path, e.g. `/vss.v1.SimilaritySearch/Search`. */
  path: string;
  /** The request message's field names (snake_case, nested ones too): a message naming one names the field. */
  fieldNames: readonly string[];
  /** A valid request, encoded. */
  valid(random: Random): Uint8Array;
  /** A structurally wrong (or edge-case) request: valid protobuf, wrong values. */
  structural(random: Random): FuzzCase;
  /** What a byte-mutated request may be answered with (it may decode to a valid request). */
  byteLevel: readonly status[];
}

export interface RpcReport {
  rpc: string;
  requests: number;
  ms: number;
  perSecond: number;
  statuses: Record<string, number>;
  /** Requests per mutation family. */
  kinds: { structural: number; byte: number };
  knownGoodChecks: number;
  failures: string[];
  /** Distinct failure signatures (status + case kind) and how often each occurred. */
  failureKinds: Record<string, number>;
  /** Wrong answers explained by a known issue, by issue. */
  knownIssueHits: Record<string, number>;
}

/** A bug the fuzz has found and that is not fixed yet: its wrong answers are counted apart, not as failures. */
export interface KnownIssue {
  /** What is wrong, as the issue's todo says it. */
  issue: string;
  matches(wrong: string, summary: string): boolean;
}

export interface FuzzOptions {
  /** Known, open bugs: a wrong answer matching one is counted under it instead of failing the run. */
  knownIssues?: readonly KnownIssue[];
  requests: number;
  inFlight: number;
  seed: number;
  /** Run the known-good request after every this many requests. */
  checkEvery: number;
  /** Share of requests mutated at the byte level (the rest are structural). */
  byteShare?: number;
  deadlineMs?: number;
  /** Stop sending once this long has passed (the seeded sequence is then cut short; `requests` says where). */
  maxMs?: number;
  /** Send at least this many even past `maxMs` (a busy machine slows the run rather than shortening it). */
  minRequests?: number;
  knownGood(): Promise<void>;
}

const NEVER_OK: readonly status[] = [status.INTERNAL, status.UNKNOWN];
const MAX_FAILURES_KEPT = 50;

export function rawClient(address: string): Client {
  return new Client(address, credentials.createInsecure(), {
    'grpc.max_send_message_length': 64 * 1024 * 1024,
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
  });
}

/** One unary call with raw request and response bytes. */
export function callRaw(
  client: Client,
  path: string,
  bytes: Uint8Array,
  deadlineMs: number,
  metadata = new Metadata(),
): Promise<{ error: ServiceError | null; response?: Buffer }> {
  return new Promise((resolve) => {
    client.makeUnaryRequest<Uint8Array, Buffer>(
      path,
      (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength),
      (b) => b,
      bytes,
      metadata,
      { deadline: Date.now() + deadlineMs },
      (error, response) => resolve({ error, response }),
    );
  });
}

/**
 * `callRaw`, sent again while the server refuses it for admission (RESOURCE_EXHAUSTED naming the
 * `grpc.admission` settings: its heavy class is full of the fuzz's own large requests), after a
 * growing pause, as the refusal asks of a client. Any other answer is the case's.
 */
async function callAdmitted(
  client: Client,
  path: string,
  bytes: Uint8Array,
  deadlineMs: number,
): Promise<ServiceError | null> {
  for (let attempt = 1; ; attempt++) {
    const { error } = await callRaw(client, path, bytes, deadlineMs);
    if (error?.code !== status.RESOURCE_EXHAUSTED || !error.details?.includes('grpc.admission')) return error;
    await new Promise((resolve) => setTimeout(resolve, Math.min(200, 10 * attempt)));
  }
}

/** Why an answer is wrong for its case, or undefined when it is right. */
export function judge(
  rpc: FuzzRpc,
  expect: Expectation,
  error: ServiceError | null,
): { wrong?: string; code: status } {
  if (error === null) {
    return expect.codes.includes(status.OK) ? { code: status.OK } : { code: status.OK, wrong: 'OK' };
  }
  const code = error.code;
  const name = status[code] ?? String(code);
  const details = error.details ?? '';
  if (NEVER_OK.includes(code)) return { code, wrong: `${name} (${details})` };
  if (!expect.codes.includes(code)) return { code, wrong: `${name} (${details.slice(0, 200)})` };
  if (details === '') return { code, wrong: `${name} without a message` };
  if (code === status.INVALID_ARGUMENT) {
    const field = String(error.metadata?.get('field')[0] ?? '');
    const undecodable = details.startsWith('request bytes do not decode');
    const named = field !== '' || undecodable || rpc.fieldNames.some((f) => details.includes(f));
    if (!named) return { code, wrong: `INVALID_ARGUMENT naming no field (${details.slice(0, 200)})` };
    if (expect.field && !expect.field.test(field || details)) {
      return {
        code,
        wrong: `INVALID_ARGUMENT naming "${field}", not ${expect.field} (${details.slice(0, 160)})`,
      };
    }
  }
  return { code };
}

/** Fuzzes one RPC; never throws for a wrong answer (they are in the report), only for a failed known-good request. */
export async function fuzzRpc(client: Client, rpc: FuzzRpc, options: FuzzOptions): Promise<RpcReport> {
  const random = new Random(options.seed);
  const byteShare = options.byteShare ?? 0.4;
  const deadlineMs = options.deadlineMs ?? 20_000;
  const statuses: Record<string, number> = {};
  const failures: string[] = [];
  const failureKinds: Record<string, number> = {};
  const knownIssueHits: Record<string, number> = {};
  const kinds = { structural: 0, byte: 0 };
  let sent = 0;
  let knownGoodChecks = 0;
  const nextCase = (): FuzzCase => {
    if (random.chance(byteShare)) {
      kinds.byte++;
      const mutation = random.pick(BYTE_MUTATIONS);
      return {
        bytes: mutation.mutate(rpc.valid(random), random),
        summary: `bytes: ${mutation.name}`,
        expect: { codes: rpc.byteLevel },
      };
    }
    kinds.structural++;
    return rpc.structural(random);
  };
  const checkKnownGood = async () => {
    knownGoodChecks++;
    await options.knownGood();
  };
  const stopAt = performance.now() + (options.maxMs ?? Number.POSITIVE_INFINITY);
  const worker = async () => {
    while (sent < options.requests && (performance.now() < stopAt || sent < (options.minRequests ?? 0))) {
      sent++;
      const n = sent;
      const fuzz = nextCase();
      const error = await callAdmitted(client, rpc.path, fuzz.bytes, deadlineMs);
      const { wrong, code } = judge(rpc, fuzz.expect, error);
      const name = status[code] ?? String(code);
      statuses[name] = (statuses[name] ?? 0) + 1;
      const known = wrong ? options.knownIssues?.find((k) => k.matches(wrong, fuzz.summary)) : undefined;
      if (known) knownIssueHits[known.issue] = (knownIssueHits[known.issue] ?? 0) + 1;
      else if (wrong) {
        const kind = `${wrong.split(' (')[0]} <- ${fuzz.summary.split(':')[0]}`;
        failureKinds[kind] = (failureKinds[kind] ?? 0) + 1;
        if (failures.length < MAX_FAILURES_KEPT) failures.push(`${wrong}: ${fuzz.summary}`);
      }
      if (n % options.checkEvery === 0) await checkKnownGood();
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: options.inFlight }, worker));
  await checkKnownGood();
  const ms = performance.now() - started;
  return {
    rpc: rpc.path,
    requests: sent,
    ms: Math.round(ms),
    perSecond: Math.round((sent * 1000) / ms),
    statuses,
    kinds,
    knownGoodChecks,
    failures,
    failureKinds,
    knownIssueHits,
  };
}

/** `s` as a string of `n` characters, cut or repeated. */
export function sized(s: string, n: number): string {
  return s.repeat(Math.ceil(n / Math.max(1, s.length))).slice(0, n);
}

/** Strings that are valid protobuf but hostile: empty, huge, NUL bytes, control characters, non-ASCII, lone surrogates (sent as U+FFFD). */
export function hostileString(random: Random): string {
  return random.pick([
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\u0000'.repeat(64),
    '\n\r\t',
    'ünïcødé 😀',
    '\ud800',
    '../../etc/passwd',
    '%s%n',
    'x'.repeat(300),
    sized('long', 100_000),
  ]);
}
