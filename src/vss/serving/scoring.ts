/**
 * The model's distance function on plain vectors, with the vector DB's score rules: DOT and COSINE
 * are similarities (higher is better), EUCLIDEAN is the distance (lower is better).
 */
import type { DistanceFunction } from '../store/index.js';

export type VectorLike = Float32Array | readonly number[];

export function score(distance: DistanceFunction, a: VectorLike, b: VectorLike): number {
  const n = Math.min(a.length, b.length);
  if (distance === 'EUCLIDEAN') {
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const d = a[i]! - b[i]!;
      sum += d * d;
    }
    return Math.sqrt(sum);
  }
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < n; i++) {
    dot += a[i]! * b[i]!;
    normA += a[i]! * a[i]!;
    normB += b[i]! * b[i]!;
  }
  if (distance === 'DOT') return dot;
  const denominator = Math.sqrt(normA) * Math.sqrt(normB);
  return denominator === 0 ? 0 : dot / denominator;
}
