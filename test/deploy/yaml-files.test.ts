/**
 * Every YAML file in the repository parses strictly and reads the same in every parser family, so
 * `kubectl kustomize`, compose, promtool and buf all accept what the tests accept.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { root } from './support/deploy-files.js';
import { parseStrictYaml } from './support/strict-yaml.js';

function trackedYamlFiles(): string[] {
  const listed = execFileSync(
    'git',
    ['ls-files', '--cached', '--others', '--exclude-standard', '*.yaml', '*.yml'],
    {
      cwd: root,
      encoding: 'utf8',
    },
  );
  return listed.split('\n').filter((line) => line.length > 0);
}

test('every YAML file in the repository parses strictly, the same in YAML 1.2 and libyaml-family parsers', () => {
  const files = trackedYamlFiles();
  assert.ok(files.includes('deploy/kubernetes/dev/nats.yaml'), `found only ${files.join(', ')}`);
  const failures: string[] = [];
  for (const file of files) {
    try {
      parseStrictYaml(readFileSync(join(root, file), 'utf8'), file);
    } catch (error) {
      failures.push((error as Error).message);
    }
  }
  assert.deepEqual(failures, []);
});

test('the strict parse refuses what kubectl refuses and what YAML 1.1 reads differently', () => {
  assert.throws(
    () => parseStrictYaml('probe: { path: /healthz?ready=true, port: 80 }\n', 'flow.yaml'),
    /libyaml-family/,
  );
  assert.throws(() => parseStrictYaml('a: 1\na: 2\n', 'dup.yaml'), /dup\.yaml document 0/);
  assert.throws(() => parseStrictYaml('enabled: yes\n', 'bool.yaml'), /read different values/);
  assert.deepEqual(parseStrictYaml('probe: { path: "/healthz?ready=true", port: 80 }\n', 'ok.yaml'), [
    { probe: { path: '/healthz?ready=true', port: 80 } },
  ]);
});
