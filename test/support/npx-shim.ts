/**
 * A directory holding an `npx` that runs this clone's bin/lattice.js for `npx lattice …` (as npx
 * does inside the clone) and refuses anything else: README and banner commands run as written.
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { latticeBin } from './lattice-up-process.js';

/** Creates `<dir>/.bin/npx` and returns that directory, to put first on PATH. */
export function npxShim(dir: string): string {
  const bin = join(dir, '.bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(
    join(bin, 'npx'),
    `#!/bin/sh\n[ "$1" = lattice ] || { echo "npx $1: only npx lattice here" >&2; exit 127; }\nshift\nexec "${process.execPath}" "${latticeBin}" "$@"\n`,
  );
  chmodSync(join(bin, 'npx'), 0o755);
  return bin;
}
