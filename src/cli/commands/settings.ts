import {
  type LoadedSettings,
  loadSettings,
  maskSecrets,
  settingsEnv,
} from '../../platform/settings/index.js';
import type { Invocation } from '../command-kit.js';

/**
 * The settings with every secret masked (secrets.ts: settings named like keys, tokens, passwords
 * and secrets, and credentials inside URLs).
 */
export function redactSettings(settings: LoadedSettings): unknown {
  return maskSecrets(settings);
}

/** Prints the effective settings as JSON, with secrets redacted, then the variables that set them. */
export async function runSettings({ context }: Invocation<object>): Promise<void> {
  const settings = loadSettings({ file: context.settingsFile });
  console.log(JSON.stringify(redactSettings(settings), null, 2));
  console.log('\nEnvironment variables:');
  for (const { env, path } of settingsEnv) console.log(`  ${env.padEnd(32)} ${path}`);
}
