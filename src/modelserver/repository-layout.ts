import { join } from 'node:path';

/** The file every version directory holds, as in Triton's ONNX backend. */
export const modelFileName = 'model.onnx';

/** Optional per-model settings beside the version directories (see model-config.ts). */
export const modelConfigFileName = 'config.json';

/** Where a version's ONNX file lives: `<repository>/<model>/<version>/model.onnx`. */
export const modelFilePath = (repository: string, model: string, version: number): string =>
  join(repository, model, String(version), modelFileName);
