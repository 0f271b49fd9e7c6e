import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { redactSettings } from '../../src/cli/commands/settings.js';
import { shouldSeedExampleModel } from '../../src/cli/example-model.js';
import { loadSettings } from '../../src/platform/settings/index.js';

describe('lattice up: seeding the example model', () => {
  test('seeds a file config store (this machine own), and etcd only when asked', () => {
    const file = loadSettings({ env: {} });
    const etcd = loadSettings({ env: { LATTICE_CONFIG_STORE: 'etcd' } });
    assert.equal(shouldSeedExampleModel(file), true);
    assert.equal(shouldSeedExampleModel(etcd), false);
    assert.equal(shouldSeedExampleModel(etcd, { seedDemo: false }), false);
    assert.equal(shouldSeedExampleModel(etcd, { seedDemo: true }), true);
  });
});

describe('lattice settings', () => {
  test('prints no secret: caller tokens, the feature store token, the page-token key, the Qdrant key', () => {
    const secrets = ['ranker-token', 'fs-token-value', 'page-token-secret-value', 'qdrant-key-value'];
    const settings = loadSettings({
      env: {
        LATTICE_CALLER_TOKENS: `ranker:${secrets[0]}`,
        LATTICE_FEATURE_STORE_CALLER_TOKEN: secrets[1]!,
        LATTICE_VSS_PAGE_TOKEN_SECRET: secrets[2]!,
        LATTICE_VSS_VECTOR_DB: 'qdrant',
        LATTICE_QDRANT_URL: 'http://qdrant:6333',
        LATTICE_QDRANT_API_KEY: secrets[3]!,
      },
    });
    const printed = JSON.stringify(redactSettings(settings));
    for (const secret of secrets) assert.ok(!printed.includes(secret), `${secret} printed`);
    assert.match(printed, /"ranker":"\*\*\*"/);
    assert.match(printed, /"url":"http:\/\/qdrant:6333"/);
    // Unset secrets stay unset rather than looking set.
    const plain = redactSettings(loadSettings({ env: {} })) as { vss: { pageTokenSecret?: string } };
    assert.equal(plain.vss.pageTokenSecret, undefined);
  });
});
