/**
 * A TypeScript client for vss serving (`vss.v1.SimilaritySearch`): searches by candidate id or by
 * vector with plain values, filters by name (`{ field: 'brand', op: 'IN', values: ['a'] }`), and
 * reads pages by token.
 *
 *   const vss = new VssClient('127.0.0.1:50055');
 *   const page = await vss.search({ entity: 'catalog', model: 'products', variant: 'all', id: 'p1' });
 *   page.candidates[0]; // { id, score, attributes }
 */
import { Metadata, type ServiceError } from '@grpc/grpc-js';
import {
  type Filter,
  FilterOp,
  type SearchRequest,
  type SearchResponse,
  SimilaritySearchClient,
} from '../gen/vss/v1/vss.js';
import { LatticeError } from '../platform/errors.js';
import { dialTarget } from '../platform/grpc/index.js';
import type { ClientTls } from '../platform/http/index.js';

/** Filter operators by name: `IN`, `NOT_IN`, `EXISTS`, `NOT_EXISTS`, `LT`, `LTE`, `GT`, `GTE`, `BETWEEN`, `BETWEEN_INCLUSIVE`. */
export const FILTER_OPS = [
  'IN',
  'NOT_IN',
  'EXISTS',
  'NOT_EXISTS',
  'LT',
  'LTE',
  'GT',
  'GTE',
  'BETWEEN',
  'BETWEEN_INCLUSIVE',
] as const;
export type FilterOpName = (typeof FILTER_OPS)[number];

export interface SearchFilter {
  field: string;
  op: FilterOpName;
  values?: readonly string[];
}

export interface SearchInput {
  entity: string;
  model: string;
  variant: string;
  /** Search near this candidate's embedding (the candidate itself is not returned) … */
  id?: string;
  /** … or near this vector (the model's dimension). */
  vector?: readonly number[];
  filters?: readonly SearchFilter[];
  /** Attributes to return with each candidate. */
  attributes?: readonly string[];
  /** Candidates per page (default 10, at most 1000). */
  pageSize?: number;
  /** A previous page's `nextPageToken`. */
  pageToken?: string;
  /** Milliseconds the call may take; default 5000. */
  deadlineMs?: number;
}

export interface SearchPage {
  candidates: { id: string; score: number; attributes: Record<string, string> }[];
  /** Empty on the last page. */
  nextPageToken: string;
}

function filterOf(filter: SearchFilter): Filter {
  const op = FilterOp[`FILTER_OP_${filter.op}` as keyof typeof FilterOp];
  if (op === undefined) {
    throw new LatticeError(
      'INVALID_ARGUMENT',
      `unknown filter op "${filter.op}": one of ${FILTER_OPS.join(', ')}`,
      {
        field: 'op',
      },
    );
  }
  return { field: filter.field, op, values: [...(filter.values ?? [])] };
}

export class VssClient {
  readonly #grpc: SimilaritySearchClient;

  /**
   * `address` is `host:port` (plaintext unless `tls` is given) or `https://host:port` /
   * `http://host:port`; `tls` is `true` (the system's roots) or the CA / client certificate to use.
   */
  constructor(address: string, options: { tls?: ClientTls | boolean } = {}) {
    const { target, credentials } = dialTarget(address, options.tls);
    this.#grpc = new SimilaritySearchClient(target, credentials);
  }

  async search(input: SearchInput): Promise<SearchPage> {
    if ((input.id === undefined) === (input.vector === undefined)) {
      throw new LatticeError('INVALID_ARGUMENT', 'give exactly one of id and vector', { field: 'id' });
    }
    const request: SearchRequest = {
      entity: input.entity,
      modelName: input.model,
      variant: input.variant,
      queries: [
        {
          ...(input.id === undefined
            ? { embedding: { values: [...input.vector!] } }
            : { candidateId: input.id }),
          pageToken: input.pageToken ?? '',
          filters: [],
        },
      ],
      pageSize: input.pageSize ?? 0,
      attributes: [...(input.attributes ?? [])],
      filters: (input.filters ?? []).map(filterOf),
    };
    const response = await new Promise<SearchResponse>((resolve, reject) =>
      this.#grpc.search(
        request,
        new Metadata(),
        { deadline: Date.now() + (input.deadlineMs ?? 5000) },
        (err: ServiceError | null, answer: SearchResponse) => (err ? reject(err) : resolve(answer)),
      ),
    );
    const result = response.results[0]!;
    return {
      candidates: result.candidates.map((c) => ({
        id: c.id,
        score: c.score,
        attributes: { ...c.attributes },
      })),
      nextPageToken: result.nextPageToken,
    };
  }

  close(): void {
    this.#grpc.close();
  }
}
