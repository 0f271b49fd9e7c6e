import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { LatticeError } from '../platform/errors.js';

/**
 * Optional `<repository>/<model>/config.json`: what the ONNX file cannot say about serving it.
 * Triton keeps the same facts in `config.pbtxt`; JSON avoids a text-proto parser.
 */
export const modelConfigSchema = z
  .object({
    /** Most rows (dim 0) one request may carry; 0 means no limit. */
    maxBatchSize: z.number().int().nonnegative().default(0),
  })
  .strict();

export type ModelConfig = z.output<typeof modelConfigSchema>;

export const defaultModelConfig: ModelConfig = modelConfigSchema.parse({});

/** Reads and validates a model's config.json; the defaults when the file is absent. */
export function readModelConfig(path: string): ModelConfig {
  if (!existsSync(path)) return defaultModelConfig;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new LatticeError('FAILED_PRECONDITION', `${path}: not valid JSON: ${(err as Error).message}`, {
      field: path,
    });
  }
  const parsed = modelConfigSchema.safeParse(raw);
  if (!parsed.success) {
    throw new LatticeError('FAILED_PRECONDITION', `${path}: ${z.prettifyError(parsed.error)}`, {
      field: path,
    });
  }
  return parsed.data;
}
