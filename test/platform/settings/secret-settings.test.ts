/**
 * No secret setting is printed: the whole settings schema is walked, every text setting is given a
 * value of its own, and what `lattice settings` would print (redactSettings) must hold none of the
 * secret ones. A text setting the rule does not call secret must be listed below as public, so a
 * new secret with an unusual name fails here instead of leaking.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { z } from 'zod';
import { redactSettings } from '../../../src/cli/commands/settings.js';
import type { LoadedSettings } from '../../../src/platform/settings/index.js';
import {
  isSecretSettingName,
  maskUrlCredentials,
  settingsSchema,
} from '../../../src/platform/settings/index.js';

/** Text settings that are not secret (names, paths, hosts, URLs: URLs have their credentials masked). */
const PUBLIC_TEXT = new Set([
  'dataDir',
  'host',
  'configStore.dir',
  'configStore.endpoints',
  'configStore.prefix',
  'queue.journalDir',
  'queue.servers',
  'sql.dataDir',
  'sql.url',
  'sql.schema',
  'cache.url',
  'cache.keyPrefix',
  'metrics.statsdHost',
  'metrics.statsdPrefix',
  'auth.callerId',
  'auth.callerIdHeader',
  'auth.callerTokenHeader',
  'orchestrator.featureStoreTarget',
  'orchestrator.featureStoreCallerId',
  'orchestrator.logTopic',
  'featurestore.registry',
  'modelserver.repository',
  'vss.consumers.embeddingsTopic',
  'vss.consumers.realtimeTopic',
  'vss.consumers.group',
  'vss.admin.operationsTopic',
  'vss.admin.group',
  'vss.admin.jobRunner.url',
  'vss.admin.trainingDataRoots',
  'vss.clusters.production.vectorDb.dir',
  'vss.clusters.production.vectorDb.url',
  'vss.clusters.production.cacheKeyPrefix',
  'vss.vectorDb.dir',
  'vss.vectorDb.url',
  // TLS settings name PEM files, not their contents.
  'tls.cert',
  'tls.key',
  'tls.clientCa',
  'tls.ca',
  'tls.clientCert',
  'tls.clientKey',
  'tls.serverName',
]);

type Shape = 'text' | 'texts' | 'textMap';
interface Leaf {
  path: string[];
  shape: Shape;
}

/** The schema under its wrappers (default, prefault, optional, nullable, pipe). */
function unwrap(schema: z.core.$ZodType): z.core.$ZodType {
  const def = schema._zod.def as { type: string; innerType?: z.core.$ZodType; in?: z.core.$ZodType };
  if (def.innerType) return unwrap(def.innerType);
  if (def.type === 'pipe' && def.in) return unwrap(def.in);
  return schema;
}

/** Every setting that holds free text (enums are not free), with its shape. */
function textLeaves(schema: z.core.$ZodType, path: string[] = []): Leaf[] {
  const inner = unwrap(schema);
  const def = inner._zod.def as {
    type: string;
    shape?: Record<string, z.core.$ZodType>;
    element?: z.core.$ZodType;
    valueType?: z.core.$ZodType;
  };
  const isText = (s: z.core.$ZodType | undefined) => s !== undefined && unwrap(s)._zod.def.type === 'string';
  if (def.type === 'object') {
    return Object.entries(def.shape!).flatMap(([key, child]) => textLeaves(child, [...path, key]));
  }
  if (def.type === 'string') return [{ path, shape: 'text' }];
  if (def.type === 'array' && isText(def.element)) return [{ path, shape: 'texts' }];
  if (def.type === 'record' && isText(def.valueType)) return [{ path, shape: 'textMap' }];
  if (def.type === 'array' || def.type === 'record') {
    assert.fail(`${path.join('.')}: a list or map of non-text values; teach this walk its shape`);
  }
  return [];
}

function setAt(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const part of path.slice(0, -1)) {
    node[part] ??= {};
    node = node[part] as Record<string, unknown>;
  }
  node[path.at(-1)!] = value;
}

const leaves = textLeaves(settingsSchema);

describe('secret settings', () => {
  test('the walk sees the whole schema', () => {
    const names = leaves.map((l) => l.path.join('.'));
    for (const known of [
      'vss.admin.apiKeys',
      'vss.clusters.production.vectorDb.apiKey',
      'auth.callerTokens',
    ]) {
      assert.ok(names.includes(known), `${known} not found by the walk`);
    }
  });

  test('every text setting is either secret by the naming rule or listed as public', () => {
    const unclassified = leaves
      .map((l) => l.path.join('.'))
      .filter((name) => !isSecretSettingName(name.split('.').at(-1)!) && !PUBLIC_TEXT.has(name));
    assert.deepEqual(
      unclassified,
      [],
      'new text settings: name a secret so it ends in apiKey, token, password, secret or privateKey ' +
        '(lattice settings masks it), or add a public one to PUBLIC_TEXT',
    );
  });

  test('no secret setting anywhere in the schema is printed, whatever its shape', () => {
    const settings: Record<string, unknown> = {};
    const secrets: string[] = [];
    for (const [i, leaf] of leaves.entries()) {
      const secret = isSecretSettingName(leaf.path.at(-1)!);
      const value = `${secret ? 'SECRET' : 'public'}-value-${i}`;
      if (secret) secrets.push(value);
      const shaped = leaf.shape === 'text' ? value : leaf.shape === 'texts' ? [value] : { someone: value };
      setAt(settings, leaf.path, shaped);
    }
    assert.ok(secrets.length >= 6, `only ${secrets.length} secrets found`);
    const printed = JSON.stringify(redactSettings(settings as unknown as LoadedSettings));
    for (const secret of secrets) assert.ok(!printed.includes(secret), `${secret} printed`);
    // Public values stay readable, and a map keeps its keys (the caller ids).
    assert.match(printed, /public-value-0/);
    assert.match(printed, /"callerTokens":\{"someone":"\*\*\*"\}/);
  });

  test('credentials in URLs are masked, the rest of the URL kept', () => {
    assert.equal(
      maskUrlCredentials('postgres://lattice:s3cret@db:5432/lattice?sslmode=require&password=x'),
      'postgres://lattice:***@db:5432/lattice?sslmode=require&password=***',
    );
    assert.equal(maskUrlCredentials('redis://:s3cret@redis:6379'), 'redis://:***@redis:6379');
    assert.equal(maskUrlCredentials('http://qdrant:6333'), 'http://qdrant:6333');
    assert.equal(maskUrlCredentials('postgres://postgres@127.0.0.1/x'), 'postgres://postgres@127.0.0.1/x');
  });

  test('lattice settings prints neither the admin API keys, the production Qdrant key nor a URL password', () => {
    const bin = fileURLToPath(new URL('../../../bin/lattice.js', import.meta.url));
    const secrets = ['admin-key-0123456789abcdef', 'production-qdrant-key', 'pg-password-value'];
    const result = spawnSync(process.execPath, [bin, 'settings'], {
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        LATTICE_VSS_ADMIN_API_KEYS: secrets[0],
        LATTICE_VSS_PRODUCTION_VECTOR_DB: 'qdrant',
        LATTICE_VSS_PRODUCTION_QDRANT_URL: 'http://qdrant-production:6333',
        LATTICE_VSS_PRODUCTION_QDRANT_API_KEY: secrets[1],
        LATTICE_SQL: 'postgres',
        LATTICE_POSTGRES_URL: `postgres://lattice:${secrets[2]}@db:5432/lattice`,
      },
    });
    assert.equal(result.status, 0, result.stderr);
    for (const secret of secrets) assert.ok(!result.stdout.includes(secret), `${secret} printed`);
    assert.match(result.stdout, /"apiKeys": \[\s*"\*\*\*"\s*\]/);
    assert.match(result.stdout, /postgres:\/\/lattice:\*\*\*@db:5432\/lattice/);
  });
});
