import { type LoadedSettings, loadSettings, settingsEnv } from '../../platform/settings/index.js';
import type { Invocation } from '../command-kit.js';

const hidden = '***';

/** The settings with every secret (caller tokens, the feature store token, keys) replaced by `***`. */
export function redactSettings(settings: LoadedSettings): unknown {
  const { vss, orchestrator, auth } = settings;
  return {
    ...settings,
    auth: {
      ...auth,
      callerTokens: Object.fromEntries(Object.keys(auth.callerTokens).map((id) => [id, hidden])),
      callerToken: auth.callerToken && hidden,
    },
    orchestrator: {
      ...orchestrator,
      featureStoreCallerToken: orchestrator.featureStoreCallerToken && hidden,
    },
    vss: {
      ...vss,
      pageTokenSecret: vss.pageTokenSecret && hidden,
      vectorDb: { ...vss.vectorDb, apiKey: vss.vectorDb.apiKey && hidden },
    },
  };
}

/** Prints the effective settings as JSON, with secrets redacted, then the variables that set them. */
export async function runSettings({ context }: Invocation<object>): Promise<void> {
  const settings = loadSettings({ file: context.settingsFile });
  console.log(JSON.stringify(redactSettings(settings), null, 2));
  console.log('\nEnvironment variables:');
  for (const { env, path } of settingsEnv) console.log(`  ${env.padEnd(32)} ${path}`);
}
