/**
 * `npm run bench -- <name> [args]` runs bench/<name>/index.ts in its own process (so one benchmark's
 * warm JIT or open handles never colour another's). Without a name, lists the benchmarks.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const available = readdirSync(here, { withFileTypes: true })
  .filter((e) => e.isDirectory() && existsSync(join(here, e.name, 'index.ts')))
  .map((e) => e.name);

const [name, ...args] = process.argv.slice(2);
if (!name || !available.includes(name)) {
  if (name) console.error(`bench: no benchmark "${name}"`);
  console.error(`usage: npm run bench -- <name>\nbenchmarks: ${available.join(', ')}`);
  process.exit(name ? 2 : 0);
}
const result = spawnSync(process.execPath, ['--import', 'tsx', join(here, name, 'index.ts'), ...args], {
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
