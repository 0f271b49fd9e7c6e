import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { DataType } from '../../src/datatypes/data-type.js';
import { FeatureRegistry } from '../../src/featurestore/index.js';
import { isLatticeError } from '../../src/platform/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'lattice-fs-registry-'));

function rejects(document: unknown, ...messages: RegExp[]): void {
  assert.throws(
    () => FeatureRegistry.fromDocument(document, 'test registry'),
    (err: unknown) => {
      assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), String(err));
      for (const message of messages) assert.match(err.message, message);
      return true;
    },
  );
}

const entity = (features: unknown[], extra: Record<string, unknown> = {}) => ({
  entities: [{ name: 'user', keys: ['user_id'], feature_groups: [{ name: 'profile', features }], ...extra }],
});

describe('feature registry', () => {
  test('loads YAML with types, dimensions and defaults in order', () => {
    const file = join(dir, 'registry.yaml');
    writeFileSync(
      file,
      `entities:
  - name: user
    keys: [user_id]
    ttl_seconds: 60
    feature_groups:
      - name: profile
        features:
          - { name: age, data_type: FP32, default: 30 }
          - { name: country, data_type: DataTypeString, default: "IN" }
          - { name: embedding, data_type: DATA_TYPE_FP16_VECTOR, vector_dim: 2, default: [0.5, 1] }
          - { name: big, data_type: int64, default: "9007199254740993" }
  - name: pair
    keys: [a, b]
    feature_groups:
      - name: g
        features: [{ name: flags, data_type: BOOL_VECTOR, vector_dim: 3, default: "true,false,true" }]
`,
    );
    const registry = FeatureRegistry.fromFile(file);
    assert.deepEqual(
      registry.entities.map((e) => [e.name, e.keys, e.ttlSeconds]),
      [
        ['user', ['user_id'], 60],
        ['pair', ['a', 'b'], undefined],
      ],
    );
    const profile = registry.entity('user')!.groupsByName.get('profile')!;
    assert.deepEqual(
      profile.features.map((f) => [
        f.name,
        DataType[f.dataType],
        f.vectorDim,
        f.index,
        Buffer.from(f.defaultValue).toString('hex'),
      ]),
      [
        ['age', 'FP32', 0, 0, '0000f041'],
        ['country', 'STRING', 0, 1, Buffer.from('IN').toString('hex')],
        ['embedding', 'FP16_VECTOR', 2, 2, '0038003c'],
        ['big', 'INT64', 0, 3, '0100000000002000'],
      ],
    );
    const flags = registry.entity('pair')!.groups[0]!.features[0]!;
    assert.equal(Buffer.from(flags.defaultValue).toString('hex'), '05');
    assert.equal(registry.toDocument().entities[0]?.name, 'user');
  });

  test('loads JSON; features without a default get the zero value', () => {
    const file = join(dir, 'registry.json');
    writeFileSync(
      file,
      JSON.stringify(
        entity([
          { name: 'v', data_type: 'STRING_VECTOR', vector_dim: 2 },
          { name: 's', data_type: 'STRING' },
        ]),
      ),
    );
    const [v, s] = FeatureRegistry.fromFile(file).entity('user')!.groups[0]!.features;
    assert.equal(Buffer.from(v!.defaultValue).toString('hex'), '0000000000000000');
    assert.equal(v!.defaultValue.length, 8);
    assert.equal(s!.defaultValue.length, 0);
  });

  test('unknown entities are INVALID_ARGUMENT naming the known ones', () => {
    const registry = FeatureRegistry.fromDocument(entity([{ name: 'age', data_type: 'FP32' }]));
    assert.equal(registry.entity('nobody'), undefined);
    assert.throws(() => registry.requireEntity('nobody'), /unknown entity "nobody" \(known: user\)/);
  });

  test('schema errors name their path', () => {
    rejects({}, /invalid test registry/, /entities: /);
    rejects(
      entity([{ name: 'age', data_type: 'FP32', colour: 'red' }]),
      /entities\[0\]\.feature_groups\[0\]\.features\[0\]\.colour: unknown field/,
    );
    rejects(entity([]), /entities\[0\]\.feature_groups\[0\]\.features: /);
    rejects(entity([{ name: 'a:b', data_type: 'FP32' }]), /features\[0\]\.name: must start with a letter/);
    rejects(entity([{ name: 'age', data_type: 'FP32', vector_dim: -1 }]), /features\[0\]\.vector_dim/);
    rejects(
      { entities: [{ name: 'user', keys: [], feature_groups: [] }] },
      /entities\[0\]\.keys/,
      /entities\[0\]\.feature_groups/,
    );
  });

  test('semantic errors name their path, all at once', () => {
    rejects(
      entity([
        { name: 'a', data_type: 'FP33' },
        { name: 'b', data_type: 'FP32', vector_dim: 4 },
        { name: 'c', data_type: 'BOOL_VECTOR' },
        { name: 'd', data_type: 'INT8', default: 300 },
        { name: 'e', data_type: 'FP32_VECTOR', vector_dim: 2, default: [1, 2, 3] },
        { name: 'a', data_type: 'FP32' },
      ]),
      /features\[0\]\.data_type: unknown data type "FP33"/,
      /features\[1\]\.vector_dim: FP32 is a scalar type/,
      /features\[2\]\.vector_dim: BOOL_VECTOR needs a vector_dim ≥ 1/,
      /features\[3\]\.default: expected an integer in \[-128, 127\] for INT8, got 300/,
      /features\[4\]\.default: a FP32_VECTOR of dimension 2 needs 2 elements, got 3/,
      /features\[5\]\.name: duplicate feature "a" in user\/profile/,
    );
    rejects(
      {
        entities: [
          {
            name: 'x',
            keys: ['k', 'k'],
            feature_groups: [{ name: 'g', features: [{ name: 'f', data_type: 'FP32' }] }],
          },
          {
            name: 'x',
            keys: ['k'],
            feature_groups: [
              { name: 'g', features: [{ name: 'f', data_type: 'FP32' }] },
              { name: 'g', features: [{ name: 'f', data_type: 'FP32' }] },
            ],
          },
        ],
      },
      /entities\[0\]\.keys\[1\]: duplicate key "k"/,
      /entities\[1\]\.name: duplicate entity "x"/,
      /entities\[1\]\.feature_groups\[1\]\.name: duplicate feature group "g"/,
    );
  });

  test('unreadable and malformed files name the file', () => {
    assert.throws(() => FeatureRegistry.fromFile(join(dir, 'absent.yaml')), /absent\.yaml cannot be read/);
    const file = join(dir, 'broken.yaml');
    writeFileSync(file, 'entities: [\n');
    assert.throws(() => FeatureRegistry.fromFile(file), /broken\.yaml is not valid JSON\/YAML/);
  });
});
