#!/usr/bin/env node
// Generates TypeScript from proto/ into src/gen/ (never edited by hand, not committed).
// buf and the ts-proto plugin both ship in node_modules, so this runs offline.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const result = spawnSync('node_modules/.bin/buf', ['generate'], { stdio: 'inherit' });
if (result.status !== 0) {
  console.error('gen-proto: buf generate failed');
  process.exit(result.status ?? 1);
}

// The services' descriptors (with their comments), for what ts-proto does not give: the proto3 JSON
// mapping of the HTTP/JSON gateway (platform/grpc-gateway) and the JSON schemas of its routes. Kept
// as base64 in a module, so the compiled package carries it without a file to find beside dist/.
const out = join(tmpdir(), `lattice-descriptors-${process.pid}.binpb`);
const built = spawnSync(
  'node_modules/.bin/buf',
  [
    'build',
    '--as-file-descriptor-set',
    '--path',
    'proto/orchestrator/v1',
    '--path',
    'proto/vss/v1',
    '-o',
    out,
  ],
  { stdio: 'inherit' },
);
if (built.status !== 0) {
  console.error('gen-proto: buf build failed');
  process.exit(built.status ?? 1);
}
const base64 = readFileSync(out).toString('base64');
rmSync(out, { force: true });
writeFileSync(
  'src/gen/descriptor-set.ts',
  `/** google.protobuf.FileDescriptorSet of proto/orchestrator/v1 and proto/vss/v1, base64 (scripts/gen-proto.mjs). */\n` +
    `export const DESCRIPTOR_SET_BASE64 =\n  '${base64}';\n`,
);
