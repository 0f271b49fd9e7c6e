/**
 * The data and checks of the onboarding tests (vss-onboarding.test.ts on embedded defaults and on
 * PostgreSQL + JetStream, vss-onboarding-pgvector.test.ts on pgvector): clustered embeddings written
 * as Parquet training data, brute-force neighbours to measure recall against, and waiting for an
 * operation over the admin API.
 */
import { join } from 'node:path';
import { seededRandom } from '../../src/platform/random.js';
import { adminCall } from '../support/admin-http.js';
import { eventually } from '../support/servers.js';
import { exactSearch } from '../support/vector-fixtures.js';
import { writeParquetFile } from '../vss/admin/jobs/training-data.js';

export const DIMENSION = 64;
const FILES = 5;
const CLUSTERS = 100;

/**
 * Embeddings as real ones are: of a low intrinsic dimension (a point of an 8-d latent space around
 * one of CLUSTERS centres, mapped linearly into 64-d) plus a little noise, rounded to float32. The
 * same seed gives the same map, so queries and data of one seed share their space.
 */
export function clusteredVectors(count: number, seed: number, mapSeed = seed): Float32Array[] {
  const LATENT = 8;
  const map = seededRandom(mapSeed);
  const weights = Array.from({ length: LATENT * DIMENSION }, () => map() * 2 - 1);
  const centres = Array.from({ length: CLUSTERS }, () => Array.from({ length: LATENT }, () => map() * 4 - 2));
  const next = seededRandom(seed * 7919 + 1);
  return Array.from({ length: count }, () => {
    const centre = centres[Math.floor(next() * CLUSTERS)]!;
    const z = centre.map((c) => c + (next() + next() + next() - 1.5) * 0.5);
    const v = new Float32Array(DIMENSION);
    for (let d = 0; d < DIMENSION; d++) {
      let x = (next() - 0.5) * 0.05;
      for (let l = 0; l < LATENT; l++) x += weights[l * DIMENSION + d]! * z[l]!;
      v[d] = x;
    }
    return v;
  });
}

export const brandOf = (n: number) => ['a', 'b', 'c'][n % 3]!;

/** The training data of one version: ids `<prefix><n>`, Parquet files of ROWS / FILES rows each. */
export function writeTraining(dir: string, prefix: string, vectors: readonly Float32Array[]): void {
  const per = Math.ceil(vectors.length / FILES);
  for (let f = 0; f < FILES; f++) {
    const rows = [];
    for (let n = f * per; n < Math.min(vectors.length, (f + 1) * per); n++) {
      rows.push({ id: `${prefix}${n}`, emb: Array.from(vectors[n]!), flag: true, brand: brandOf(n) });
    }
    writeParquetFile(join(dir, `part-${f}.parquet`), rows, { rowGroupSize: 4096 });
  }
}

/** Row numbers of the 10 members nearest to `query` by cosine, best first. */
export function bruteForceTop10(
  query: Float32Array,
  vectors: readonly Float32Array[],
  member: (n: number) => boolean,
): number[] {
  const dimension = query.length;
  const rows = new Float32Array(vectors.length * dimension);
  for (let n = 0; n < vectors.length; n++) rows.set(vectors[n]!, n * dimension);
  return exactSearch(rows, dimension, query, 10, 'COSINE', member).indices;
}

export async function waitOperation(base: string, id: string): Promise<Record<string, unknown>> {
  let last: Record<string, unknown> = {};
  await eventually(
    async () => {
      last = (await adminCall(base, 'GET', `/operations/${id}`)).json;
      if (last.status === 'FAILED') throw new Error(`operation ${id} failed: ${String(last.last_error)}`);
      return last.status === 'SUCCEEDED';
    },
    300_000,
    `operation ${id} to succeed`,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; it is at ${JSON.stringify(last)}`);
  });
  return last;
}
