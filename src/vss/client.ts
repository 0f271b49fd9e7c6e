/**
 * The TypeScript client of vss serving (`vss.v1.SimilaritySearch`), published as `lattice/vss-client`:
 * every RPC with plain values. Search by candidate id or by vector, filters by name
 * (`{ field: 'brand', op: 'IN', values: ['a'] }`), pages by token; several queries in one call; the
 * stored embeddings of candidates; candidates scored against a vector. It takes the same options as
 * `lattice/client`'s OrchestratorClient (caller id and token, TLS).
 *
 *   const vss = new VssClient('127.0.0.1:50055', { callerId: 'shop', callerToken: 's3cret' });
 *   const page = await vss.search({ entity: 'catalog', model: 'products', variant: 'all', id: 'c2' });
 *   page.candidates[0]; // { id, score, attributes }
 */
import type { Metadata, ServiceError } from '@grpc/grpc-js';
import {
  type Filter,
  FilterOp,
  type Query,
  type QueryResult,
  SimilaritySearchClient,
} from '../gen/vss/v1/vss.js';
import { type ErrorCode, LatticeError } from '../platform/errors.js';
import { type ClientOptions, dialClient } from '../platform/grpc/client-options.js';
import { FILTER_OPS, type FilterOp as FilterOpName } from '../platform/vectordb/vector-db.js';

export type { ClientOptions, ClientTlsOptions } from '../platform/grpc/client-options.js';

/**
 * Filter operators by name: `IN`, `NOT_IN`, `EXISTS`, `NOT_EXISTS`, `LT`, `LTE`, `GT`, `GTE`,
 * `BETWEEN`, `BETWEEN_INCLUSIVE`; the VectorDb port's, which serving applies as they come.
 */
export { FILTER_OPS } from '../platform/vectordb/vector-db.js';
export type { FilterOpName };

export interface SearchFilter {
  field: string;
  op: FilterOpName;
  values?: readonly string[];
}

/** What one query searches near: exactly one of `id` and `vector`. */
export interface SearchQuery {
  /** Search near this candidate's embedding (the candidate itself is not returned) … */
  id?: string;
  /** … or near this vector (the model's dimension). */
  vector?: readonly number[];
  /** A previous page's `nextPageToken`. */
  pageToken?: string;
}

interface SearchCommon {
  entity: string;
  model: string;
  variant: string;
  /** Filters of every query. */
  filters?: readonly SearchFilter[];
  /** Attributes to return with each candidate. */
  attributes?: readonly string[];
  /** Candidates per page (default 10, at most 1000). */
  pageSize?: number;
  /** HNSW width of this search, wider than the variant's ef_search for higher recall (at most 4096). */
  searchWidth?: number;
  /** Milliseconds the call may take; default 5000. */
  deadlineMs?: number;
}

export interface SearchInput extends SearchCommon, SearchQuery {}

export interface MultiSearchInput extends SearchCommon {
  /** Answered in this order; each may add filters of its own. */
  queries: readonly (SearchQuery & { filters?: readonly SearchFilter[] })[];
}

export interface Candidate {
  id: string;
  score: number;
  attributes: Record<string, string>;
}

export interface SearchPage {
  candidates: Candidate[];
  /** Empty on the last page. */
  nextPageToken: string;
}

/** One query's answer in a multi-query search: its page, or why it alone failed. */
export interface QueryPage extends SearchPage {
  /** Empty when the query was answered; otherwise `CODE: message` (e.g. a candidate without an embedding). */
  error: string;
}

export interface EmbeddingsInput {
  entity: string;
  model: string;
  ids: readonly string[];
  deadlineMs?: number;
}

export interface CandidateEmbedding {
  id: string;
  /** False when the model has no embedding for this id (the vectors are then empty). */
  found: boolean;
  embedding: number[];
  /** The embedding used when this candidate is the query (equals `embedding` unless set apart). */
  searchEmbedding: number[];
}

export interface ScoreInput {
  entity: string;
  model: string;
  /** The vector to score against (the model's dimension). */
  vector: readonly number[];
  ids: readonly string[];
  deadlineMs?: number;
}

export interface CandidateScore {
  id: string;
  /** False when the model has no embedding for this id (the score is then 0). */
  found: boolean;
  /** By the model's distance function (higher is better, except EUCLIDEAN: the distance). */
  score: number;
}

function filterOf(filter: SearchFilter, field: string): Filter {
  const op = FILTER_OPS.includes(filter.op)
    ? FilterOp[`FILTER_OP_${filter.op}` as keyof typeof FilterOp]
    : undefined;
  if (op === undefined) {
    throw new LatticeError(
      'INVALID_ARGUMENT',
      `${field}.op: unknown filter op "${filter.op}": one of ${FILTER_OPS.join(', ')}`,
      { field: `${field}.op` },
    );
  }
  return { field: filter.field, op, values: [...(filter.values ?? [])] };
}

function queryOf(query: MultiSearchInput['queries'][number], field: string): Query {
  if ((query.id === undefined) === (query.vector === undefined)) {
    throw new LatticeError('INVALID_ARGUMENT', `${field}: give exactly one of id and vector`, { field });
  }
  return {
    ...(query.id === undefined ? { embedding: { values: [...query.vector!] } } : { candidateId: query.id }),
    pageToken: query.pageToken ?? '',
    filters: (query.filters ?? []).map((f, i) => filterOf(f, `${field}.filters[${i}]`)),
  };
}

function pageOf(result: QueryResult): QueryPage {
  return {
    candidates: result.candidates.map((c) => ({ id: c.id, score: c.score, attributes: { ...c.attributes } })),
    nextPageToken: result.nextPageToken,
    error: result.error,
  };
}

const ERROR_CODES: ReadonlySet<string> = new Set<ErrorCode>([
  'INVALID_ARGUMENT',
  'NOT_FOUND',
  'FAILED_PRECONDITION',
  'UNAVAILABLE',
  'DEADLINE_EXCEEDED',
  'RESOURCE_EXHAUSTED',
]);

/** A query's own `CODE: message` error as a LatticeError with that code. */
function queryError(error: string): LatticeError {
  const code = /^([A-Z_]+): /.exec(error)?.[1];
  return ERROR_CODES.has(code ?? '')
    ? new LatticeError(code as ErrorCode, error.slice(code!.length + 2))
    : new LatticeError('INTERNAL', error);
}

type Call<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: { deadline: number },
  callback: (error: ServiceError | null, response: Res) => void,
) => unknown;

export class VssClient {
  readonly #grpc: SimilaritySearchClient;
  readonly #metadata: Metadata;

  /**
   * `address` is `host:port` (plaintext unless `tls` is given) or `https://host:port` /
   * `http://host:port`; `options` as for every Lattice client (ClientOptions: caller id and token, TLS).
   */
  constructor(address: string, options: ClientOptions = {}) {
    const { target, credentials, metadata } = dialClient(address, options);
    this.#grpc = new SimilaritySearchClient(target, credentials);
    this.#metadata = metadata;
  }

  #call<Req, Res>(call: Call<Req, Res>, request: Req, deadlineMs: number | undefined): Promise<Res> {
    return new Promise((resolve, reject) =>
      call.call(
        this.#grpc,
        request,
        this.#metadata,
        { deadline: Date.now() + (deadlineMs ?? 5000) },
        (err, answer) => (err ? reject(err) : resolve(answer)),
      ),
    );
  }

  /** One page of one query; a query the server could not answer (e.g. an id without an embedding) rejects with its code. */
  async search(input: SearchInput): Promise<SearchPage> {
    if ((input.id === undefined) === (input.vector === undefined)) {
      throw new LatticeError('INVALID_ARGUMENT', 'give exactly one of id and vector', { field: 'id' });
    }
    const [page] = await this.searchMany({ ...input, queries: [input] });
    if (page!.error) throw queryError(page!.error);
    return { candidates: page!.candidates, nextPageToken: page!.nextPageToken };
  }

  /** Several queries in one call, answered in order; a query that failed alone has its `error` and no candidates. */
  async searchMany(input: MultiSearchInput): Promise<QueryPage[]> {
    const response = await this.#call(
      this.#grpc.search,
      {
        entity: input.entity,
        modelName: input.model,
        variant: input.variant,
        queries: input.queries.map((q, i) => queryOf(q, `queries[${i}]`)),
        pageSize: input.pageSize ?? 0,
        attributes: [...(input.attributes ?? [])],
        filters: (input.filters ?? []).map((f, i) => filterOf(f, `filters[${i}]`)),
        searchWidth: input.searchWidth ?? 0,
      },
      input.deadlineMs,
    );
    return response.results.map(pageOf);
  }

  /** The stored embeddings of `ids`, in their order. */
  async getEmbeddings(input: EmbeddingsInput): Promise<CandidateEmbedding[]> {
    const response = await this.#call(
      this.#grpc.getEmbeddings,
      { entity: input.entity, modelName: input.model, candidateIds: [...input.ids] },
      input.deadlineMs,
    );
    return response.embeddings.map((e) => ({
      id: e.id,
      found: e.found,
      embedding: e.embedding?.values ?? [],
      searchEmbedding: e.searchEmbedding?.values ?? [],
    }));
  }

  /** `ids` scored against `vector` by the model's distance function, in their order. */
  async scoreCandidates(input: ScoreInput): Promise<CandidateScore[]> {
    const response = await this.#call(
      this.#grpc.scoreCandidates,
      {
        entity: input.entity,
        modelName: input.model,
        embedding: { values: [...input.vector] },
        candidateIds: [...input.ids],
      },
      input.deadlineMs,
    );
    return response.scores.map((s) => ({ id: s.id, found: s.found, score: s.score }));
  }

  close(): void {
    this.#grpc.close();
  }
}
