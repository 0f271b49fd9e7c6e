import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { checkPortsFree } from '../../src/cli/port-check.js';
import { isLatticeError } from '../../src/platform/errors.js';

const bin = fileURLToPath(new URL('../../bin/lattice.js', import.meta.url));

async function occupy(): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}
const portOf = (server: Server) => (server.address() as { port: number }).port;

describe('ports are checked before anything starts', () => {
  let taken: Server[] = [];
  before(async () => {
    taken = [await occupy(), await occupy()];
  });
  after(() => {
    for (const server of taken) server.close();
  });

  test('every conflict at once, each with the setting and variable that move it', async () => {
    const [a, b] = taken.map(portOf);
    await assert.rejects(
      checkPortsFree('127.0.0.1', [
        { setting: 'vss.admin.port', port: a! },
        { setting: 'orchestrator.port', port: 0 },
        { setting: 'grpc.port', port: b! },
      ]),
      (err) => {
        assert.ok(isLatticeError(err, 'FAILED_PRECONDITION'));
        assert.match(err.message, /2 ports cannot be used, nothing was started/);
        assert.match(
          err.message,
          new RegExp(
            `127\\.0\\.0\\.1:${a} is in use: change vss\\.admin\\.port \\(LATTICE_VSS_ADMIN_PORT\\)`,
          ),
        );
        assert.match(
          err.message,
          new RegExp(`127\\.0\\.0\\.1:${b} is in use: change grpc\\.port \\(LATTICE_GRPC_PORT\\)`),
        );
        return true;
      },
    );
    await assert.rejects(
      checkPortsFree('127.0.0.1', [
        { setting: 'vss.servingPort', port: 45_123 },
        { setting: 'vss.admin.port', port: 45_123 },
      ]),
      /port 45123 is set for both vss\.servingPort and vss\.admin\.port/,
    );
    await checkPortsFree('127.0.0.1', [{ setting: 'grpc.port', port: 0 }]);
  });

  test('lattice up with two ports taken exits 1 naming both, having started nothing', () => {
    const [a, b] = taken.map(portOf);
    const result = spawnSync(process.execPath, [bin, 'up'], {
      env: {
        ...process.env,
        LATTICE_DATA_DIR: join(tmpdir(), `lattice-ports-${process.pid}`),
        LATTICE_GRPC_PORT: '0',
        LATTICE_METRICS_PORT: '0',
        LATTICE_ORCHESTRATOR_PORT: String(a),
        LATTICE_FEATURESTORE_PORT: '0',
        LATTICE_MODELSERVER_PORT: '0',
        LATTICE_COMPUTE_PORT: '0',
        LATTICE_VSS_SERVING_PORT: '0',
        LATTICE_VSS_ADMIN_PORT: String(b),
        LATTICE_LOG_LEVEL: 'warn',
      },
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(result.status, 1, result.stderr);
    assert.match(result.stderr, /LATTICE_ORCHESTRATOR_PORT/);
    assert.match(result.stderr, /LATTICE_VSS_ADMIN_PORT/);
    assert.doesNotMatch(result.stdout, /is up/);
    assert.doesNotMatch(result.stderr, /grpc/i);
  });
});
