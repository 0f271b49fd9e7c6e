import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type ComponentDependency, Topology } from '../../../src/orchestrator/dag/index.js';
import { isLatticeError } from '../../../src/platform/errors.js';

/** Every edge of `dependency` goes forward in `topology.nodes`. */
function assertTopological(topology: Topology, dependency: ComponentDependency): void {
  for (const [from, successors] of Object.entries(dependency)) {
    for (const to of successors) {
      assert.ok(
        topology.indexOf(from) < topology.indexOf(to),
        `${from} must come before ${to} in ${topology.nodes.join(', ')}`,
      );
    }
  }
}

function assertInvalid(build: () => unknown, message: string, field: string): void {
  assert.throws(build, (err) => {
    assert.ok(isLatticeError(err, 'INVALID_ARGUMENT'), String(err));
    assert.equal(err.message, message);
    assert.equal(err.field, field);
    return true;
  });
}

const catalog: ComponentDependency = {
  catalog_features: ['user_x_category', 'ranker'],
  user_features: ['ranker'],
  user_x_category: ['ranker'],
  ranker: ['blend'],
  blend: [],
};

describe('Topology.build', () => {
  test('nodes are the keys and every listed successor, in a topological order', () => {
    const dependency = { a: ['b', 'c'], c: ['d'] };
    const topology = Topology.build(dependency);
    assert.deepEqual([...topology.nodes].sort(), ['a', 'b', 'c', 'd']);
    assertTopological(topology, dependency);
    assert.deepEqual(topology.successorsOf('a').sort(), ['b', 'c']);
    assert.deepEqual(topology.successorsOf('b'), []);
    assert.equal(topology.indexOf('nope'), -1);
    assert.equal(topology.size, 4);
  });

  test('the design example: roots, in-degrees and successor arrays agree with the document', () => {
    const topology = Topology.build(catalog);
    assertTopological(topology, catalog);
    const rootNames = [...topology.roots].map((i) => topology.nodes[i]).sort();
    assert.deepEqual(rootNames, ['catalog_features', 'user_features']);
    assert.equal(topology.inDegrees[topology.indexOf('ranker')], 3);
    assert.equal(topology.inDegrees[topology.indexOf('blend')], 1);
    const i = topology.indexOf('catalog_features');
    const successors = topology.successorIndices.subarray(
      topology.successorOffsets[i],
      topology.successorOffsets[i + 1],
    );
    assert.deepEqual([...successors].map((j) => topology.nodes[j]).sort(), ['ranker', 'user_x_category']);
    assert.equal(topology.successorOffsets[topology.size], 5);
  });

  test('duplicate successors count once', () => {
    const topology = Topology.build({ a: ['b', 'b'], b: [] });
    assert.equal(topology.inDegrees[topology.indexOf('b')], 1);
    assert.deepEqual(topology.successorsOf('a'), ['b']);
  });

  test('an implicit root precedes exactly the nodes nobody lists', () => {
    const topology = Topology.build(catalog, { root: 'feature_init' });
    assert.equal(topology.nodes[0], 'feature_init');
    assert.deepEqual([...topology.roots], [0]);
    assert.deepEqual(topology.successorsOf('feature_init').sort(), ['catalog_features', 'user_features']);
    assert.equal(topology.inDegrees[topology.indexOf('ranker')], 3);
  });

  test('a root written in the document is not given extra edges', () => {
    const topology = Topology.build({ feature_init: ['a'], a: ['b'], c: [] }, { root: 'feature_init' });
    assert.deepEqual(topology.successorsOf('feature_init').sort(), ['a', 'c']);
    assert.equal(topology.inDegrees[topology.indexOf('a')], 1);
  });

  test('an empty DAG is INVALID_ARGUMENT, with or without a root', () => {
    const message = 'component_dependency is empty: a model needs at least one component';
    assertInvalid(() => Topology.build({}), message, 'component_dependency');
    assertInvalid(() => Topology.build({}, { root: 'feature_init' }), message, 'component_dependency');
  });

  describe('cycles are INVALID_ARGUMENT showing the path', () => {
    test('self-loop', () => {
      assertInvalid(
        () => Topology.build({ a: ['a'] }),
        'component_dependency has a cycle: a → a',
        'component_dependency.a',
      );
    });

    test('two nodes', () => {
      assertInvalid(
        () => Topology.build({ ranker: ['blend'], blend: ['ranker'] }),
        'component_dependency has a cycle: blend → ranker → blend',
        'component_dependency.blend',
      );
    });

    test('a long cycle behind an acyclic prefix, with nodes hanging off it', () => {
      const dependency = { start: ['c'], c: ['d'], d: ['e'], e: ['f', 'after'], f: ['c'], other: [] };
      assertInvalid(
        () => Topology.build(dependency),
        'component_dependency has a cycle: c → d → e → f → c',
        'component_dependency.c',
      );
    });

    test('the message does not depend on key order', () => {
      const message = 'component_dependency has a cycle: x → y → z → x';
      assertInvalid(
        () => Topology.build({ z: ['x'], y: ['z'], x: ['y'] }),
        message,
        'component_dependency.x',
      );
      assertInvalid(
        () => Topology.build({ x: ['y'], y: ['z'], z: ['x'] }),
        message,
        'component_dependency.x',
      );
    });

    test('listing the implicit root as a successor closes a cycle through it', () => {
      assertInvalid(
        () => Topology.build({ a: ['feature_init'] }, { root: 'feature_init' }),
        'component_dependency has a cycle: a → feature_init → a',
        'component_dependency.a',
      );
    });
  });

  describe('hash', () => {
    test('is independent of key order and successor-list order', () => {
      const reordered: ComponentDependency = {
        blend: [],
        ranker: ['blend'],
        user_x_category: ['ranker'],
        user_features: ['ranker'],
        catalog_features: ['ranker', 'user_x_category'],
      };
      const a = Topology.build(catalog);
      const b = Topology.build(reordered);
      assert.match(a.hash, /^[0-9a-f]{32}$/);
      assert.equal(a.hash, b.hash);
      assert.deepEqual(a.nodes, b.nodes);
      assert.deepEqual(a.successorIndices, b.successorIndices);
    });

    test('a leaf written with an empty list or only as a successor is the same DAG', () => {
      assert.equal(Topology.build({ a: ['b'] }).hash, Topology.build({ a: ['b'], b: [] }).hash);
    });

    test('an implicit root hashes like the same root written out', () => {
      const implicit = Topology.build({ a: ['b'], c: [] }, { root: 'r' });
      const explicit = Topology.build({ r: ['c', 'a'], a: ['b'] });
      assert.equal(implicit.hash, explicit.hash);
    });

    test('differs when an edge, a node or the root differs', () => {
      const hashes = new Set([
        Topology.build({ a: ['b'], b: ['c'] }).hash,
        Topology.build({ a: ['b', 'c'], b: ['c'] }).hash,
        Topology.build({ a: ['b'], b: ['c'], d: [] }).hash,
        Topology.build({ a: ['b'], b: ['c'] }, { root: 'r' }).hash,
        Topology.build({ a: ['c'], c: ['b'] }).hash,
      ]);
      assert.equal(hashes.size, 5);
    });
  });
});
