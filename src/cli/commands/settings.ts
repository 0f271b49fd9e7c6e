import { loadSettings, settingsEnv } from '../../platform/settings/index.js';
import type { CliContext } from '../main.js';

/** Prints the effective settings as JSON, with caller tokens redacted, then the variables that set them. */
export async function runSettings(context: CliContext): Promise<void> {
  const settings = loadSettings({ file: context.settingsFile });
  const redacted = {
    ...settings,
    auth: {
      ...settings.auth,
      callerTokens: Object.fromEntries(Object.keys(settings.auth.callerTokens).map((id) => [id, '***'])),
    },
  };
  console.log(JSON.stringify(redacted, null, 2));
  console.log('\nEnvironment variables:');
  for (const { env, path } of settingsEnv) console.log(`  ${env.padEnd(28)} ${path}`);
}
