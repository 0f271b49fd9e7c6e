/**
 * The embedded engine's native addon (native/hnsw-parallel, compiled by `npm ci` / the package's
 * install step with node-gyp, native/hnsw-parallel/build.mjs), loaded once per path: the parallel
 * graph builder (parallel-builder.ts) and the serving graph searched off the event loop
 * (graph-index.ts). Optional: a machine without a C++ toolchain installs Lattice without it, and the
 * engine goes on without either (each user says what it does instead).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { packageRoot } from '../../../package-root.js';

/** Where the install step leaves the compiled addon. */
export const NATIVE_ADDON_PATH = join(packageRoot, 'native/hnsw-parallel/build/Release/hnsw_parallel.node');

/** What loading each addon path gave: its exports, or why there are none. */
const loaded = new Map<
  string,
  { exports: Record<string, unknown> | undefined; problem: string | undefined }
>();

/** The addon's exports at `path`, or why it does not load (never thrown). */
export function loadNativeAddon(path = NATIVE_ADDON_PATH): {
  exports: Record<string, unknown> | undefined;
  problem: string | undefined;
} {
  let result = loaded.get(path);
  if (result === undefined) {
    if (!existsSync(path)) {
      result = { exports: undefined, problem: `${path} is not there (not compiled at install)` };
    } else {
      try {
        result = {
          exports: createRequire(import.meta.url)(path) as Record<string, unknown>,
          problem: undefined,
        };
      } catch (err) {
        result = { exports: undefined, problem: err instanceof Error ? err.message : String(err) };
      }
    }
    loaded.set(path, result);
  }
  return result;
}

/**
 * The export `name` of the addon at `path` when it is a class (a function), or why not: the addon
 * does not load, or is an older build without it.
 */
export function nativeExport<T>(
  name: string,
  path = NATIVE_ADDON_PATH,
): { value: T | undefined; problem: string | undefined } {
  const { exports, problem } = loadNativeAddon(path);
  if (!exports) return { value: undefined, problem };
  const value = exports[name];
  return typeof value === 'function'
    ? { value: value as T, problem: undefined }
    : { value: undefined, problem: `${path} exports no ${name}` };
}
