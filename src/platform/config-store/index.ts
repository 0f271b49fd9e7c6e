import { z } from 'zod';
import { LatticeError } from '../errors.js';
import type { ConfigStore } from './config-store.js';
import { FileConfigStore } from './file/file-config-store.js';

export type {
  ConfigDeleteEvent,
  ConfigEntry,
  ConfigEvent,
  ConfigInvalidEvent,
  ConfigListener,
  ConfigListOptions,
  ConfigPutEvent,
  ConfigStore,
  ConfigWatch,
  ConfigWatchOptions,
} from './config-store.js';
// The etcd adapter (and its client library) is imported when an etcd store is opened: the embedded
// default never loads it. Its class is in ./etcd/etcd-config-store.ts.
export type { EtcdConfigStoreOptions } from './etcd/etcd-config-store.js';
export { FileConfigStore, type FileConfigStoreOptions } from './file/file-config-store.js';
export { assertKey, assertPrefix, keyProblem } from './keys.js';

const timeoutMs = z.number().int().positive().max(600_000);

/** Which ConfigStore to use: a directory (embedded mode) or etcd (distributed mode). */
export const configStoreSettingsSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('file'),
    dir: z.string().min(1),
    debounceMs: z.number().int().min(0).max(60_000).optional(),
    pollIntervalMs: timeoutMs.optional(),
  }),
  z.object({
    kind: z.literal('etcd'),
    endpoints: z.array(z.string().min(1)).min(1),
    prefix: z.string().optional(),
    dialTimeoutMs: timeoutMs.optional(),
    requestTimeoutMs: timeoutMs.optional(),
  }),
]);

export type ConfigStoreSettings = z.infer<typeof configStoreSettingsSchema>;

/**
 * Opens the ConfigStore the settings name. Settings are validated (INVALID_ARGUMENT on a mistake);
 * an etcd store is checked to answer within `dialTimeoutMs` (UNAVAILABLE naming the endpoints if not).
 */
export async function createConfigStore(settings: ConfigStoreSettings): Promise<ConfigStore> {
  const parsed = configStoreSettingsSchema.safeParse(settings);
  if (!parsed.success) {
    throw new LatticeError(
      'INVALID_ARGUMENT',
      `invalid config store settings: ${z.prettifyError(parsed.error)}`,
      {
        field: 'configStore',
      },
    );
  }
  const options = parsed.data;
  switch (options.kind) {
    case 'file':
      return new FileConfigStore(options);
    case 'etcd':
      return (await import('./etcd/etcd-config-store.js')).EtcdConfigStore.connect(options);
  }
}
