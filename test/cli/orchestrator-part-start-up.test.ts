/**
 * The orchestrator as `lattice up` and `lattice orchestrator` start it listens at once but answers
 * every Predict UNAVAILABLE ("… is starting") until the process has started all its parts: in `lattice
 * up`, vss loads its vector database after the orchestrator is bound, on the same event loop, and a
 * Predict must not wait on that unanswered (issue 36, item 11). Once opened it serves.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type ServiceError, status } from '@grpc/grpc-js';
import { OrchestratorClient } from '../../src/orchestrator/client.js';
import { type OrchestratorPart, startOrchestratorPart } from '../../src/orchestrator/index.js';
import { createLogger } from '../../src/platform/logging/index.js';
import { Platform } from '../../src/platform/platform.js';
import { loadSettings } from '../../src/platform/settings/index.js';

describe('the orchestrator part during start-up', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'lattice-orchestrator-part-'));
  let platform: Platform;
  let part: OrchestratorPart;
  let client: OrchestratorClient;

  before(async () => {
    const settings = loadSettings({
      env: { LATTICE_DATA_DIR: dataDir },
      overrides: { queue: { journalDir: '' } },
    });
    platform = new Platform(settings, { logger: createLogger('test', { level: 'silent' }) });
    part = await startOrchestratorPart(platform, 0);
    client = new OrchestratorClient(`127.0.0.1:${part.port}`);
  });
  after(async () => {
    client.close();
    await part.stop();
    await platform.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const predict = () =>
    client.pointWise({
      modelConfigId: 'no_such_model',
      targets: [{ id: 'a', features: {} }],
      deadlineMs: 60_000,
    });

  test('a Predict answers UNAVAILABLE at once, saying the orchestrator is starting', async () => {
    // The deadline is far: a call left waiting would end DEADLINE_EXCEEDED, not UNAVAILABLE.
    await assert.rejects(predict(), (err) => {
      assert.equal((err as ServiceError).code, status.UNAVAILABLE, String(err));
      assert.match((err as ServiceError).details, /orchestrator is starting and not serving yet/);
      return true;
    });
  });

  test('a Predict is served once the process has started', async () => {
    part.open?.();
    await assert.rejects(predict(), (err) => {
      assert.equal((err as ServiceError).code, status.NOT_FOUND, String(err));
      return true;
    });
  });
});
