/**
 * The readiness probes of the manifests point at /readyz of each component's ops server, and rely on
 * it covering the process's own servers, not only the adapters they use (the vss components are
 * covered by test/cli/lattice-vss.test.ts). Here the two others with an ops server, run as processes
 * on embedded defaults: `lattice orchestrator` and `lattice compute --metrics-port`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { startOrchestratorProcess } from '../support/orchestrator-process.js';
import { eventually } from '../support/servers.js';
import { root } from './support/deploy-files.js';

async function readiness(opsUrl: string): Promise<{ status: number; checks: Record<string, string> }> {
  const response = await fetch(`${opsUrl}/readyz`);
  const body = (await response.json()) as { checks: Record<string, string> };
  return { status: response.status, checks: body.checks };
}

describe('/readyz of the components probed with it', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  test('lattice orchestrator checks its own gRPC server', { timeout: 60_000 }, async () => {
    const configDir = mkdtempSync(join(tmpdir(), 'lattice-deploy-ready-'));
    cleanups.push(() => rmSync(configDir, { recursive: true, force: true }));
    // The feature store is dialled per request only; none is made here.
    const orchestrator = await startOrchestratorProcess({ configDir, featureStoreTarget: '127.0.0.1:9' });
    cleanups.push(async () => {
      await orchestrator.stop();
    });
    const { status, checks } = await readiness(orchestrator.opsUrl);
    assert.equal(status, 200, JSON.stringify(checks));
    assert.equal(checks.orchestrator, 'ok', JSON.stringify(checks));
  });

  test('lattice compute --metrics-port checks its own gRPC server', { timeout: 60_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'lattice-deploy-ready-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !name.startsWith('LATTICE_')),
    );
    const child = spawn(
      process.execPath,
      [join(root, 'bin/lattice.js'), 'compute', '--port', '0', '--metrics-port', '0'],
      {
        env: { ...env, LATTICE_DATA_DIR: dataDir, LATTICE_LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    cleanups.push(async () => {
      child.kill('SIGTERM');
      await exited;
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    let opsUrl: string | undefined;
    await eventually(
      () => {
        opsUrl = /HTTP \/healthz \/readyz \/metrics(?: \/models)?\s+(http:\/\/\S+)/.exec(output)?.[1];
        return opsUrl !== undefined;
      },
      45_000,
      'lattice compute to print its ops address',
    );
    const { status, checks } = await readiness(opsUrl!);
    assert.equal(status, 200, JSON.stringify(checks));
    assert.equal(checks.compute, 'ok', JSON.stringify(checks));
  });
});
