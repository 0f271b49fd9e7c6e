/**
 * `lattice vss publish`, `lattice vss dead-letters` and the demo's pair and slate scores, as a user
 * tries them on embedded defaults beside a running `lattice up` (its queue lives inside it, so both
 * commands go through its ops server): a file with a bad line is refused whole, naming the line; a
 * real-time event changes an attribute Search returns; an embedding event adds a point Search finds;
 * a poison event (valid, but for an entity with no store) is dead-lettered, listed with its reason and
 * logged once with its id; `lattice predict --kind pair|slate` answers scores.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { startLattice } from '../support/lattice-up-process.js';
import { runLattice } from '../support/lattice-vss-process.js';
import { eventually } from '../support/servers.js';
import { Client } from '../vss/serving/harness.js';

/** `lattice up` onboards the 1,000-product vss demo before it prints Ctrl-C: slow on a busy machine. */
const START_TIMEOUT_MS = 240_000;

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

test('beside lattice up: vss publish lands events, vss dead-letters lists a poison event, pairs and slates score', {
  timeout: 600_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lattice-vss-publish-'));
  dirs.push(dir);
  const dataDir = join(dir, 'data');
  const up = startLattice(['up'], { LATTICE_DATA_DIR: dataDir });
  try {
    await eventually(
      () => up.output.stdout.includes('Ctrl-C') || up.child.exitCode !== null,
      START_TIMEOUT_MS,
      'lattice up to start',
    );
    assert.match(up.output.stdout, /Onboarded the vss demo/, up.output.stderr);
    const opsUrl = /HTTP \/healthz \/readyz \/metrics \/models\s+(\S+)/.exec(up.output.stdout)?.[1];
    const vssAddress = /gRPC vss\.v1\.SimilaritySearch\s+(\S+)\n/.exec(up.output.stdout)?.[1];
    const adminUrl = /HTTP vss admin API .*?\s(http:\/\/\S+)\s*$/m.exec(up.output.stdout)?.[1];
    const orchestrator = /gRPC orchestrator\.v1 .*\s+(\S+)\n/.exec(up.output.stdout)?.[1];
    assert.ok(opsUrl && vssAddress && adminUrl && orchestrator, up.output.stdout);
    // As a user points the commands at it: the ops port through the settings, or --address.
    const env = { LATTICE_DATA_DIR: dataDir, LATTICE_METRICS_PORT: new URL(opsUrl).port };
    const file = (name: string, lines: unknown[]) => {
      const path = join(dir, name);
      writeFileSync(
        path,
        `${lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n')}\n`,
      );
      return path;
    };

    const vss = new Client(vssAddress);
    try {
      const demo = readFileSync(join(dataDir, 'demo', 'products', 'part-0.jsonl'), 'utf8').split('\n');
      const c1 = JSON.parse(demo.find((l) => l.includes('"c1"'))!) as { embedding: number[]; brand: string };
      const nearest = async (vector: number[]) => {
        const found = await vss.search({
          entity: 'catalog',
          modelName: 'products',
          variant: 'all',
          queries: [{ embedding: { values: vector }, pageToken: '', filters: [] }],
          pageSize: 1,
          attributes: ['brand'],
        });
        const candidate = found.results[0]!.candidates[0];
        return { id: candidate?.id, brand: candidate?.attributes.brand };
      };
      assert.deepEqual(await nearest(c1.embedding), { id: 'c1', brand: c1.brand });

      // One bad line refuses the file: every bad line named, nothing published. Its good line is
      // newer than the one published next: had it gone out, it would win.
      const refused = await runLattice(
        [
          'vss',
          'publish',
          'realtime',
          file('refused.jsonl', [
            {
              timestamp: 2000,
              entity_label: 'catalog',
              data: [{ id: 'c1', label: 'brand', value: 'refused' }],
            },
            { timestamp: 2000, entity_label: 'catalog', data: [{ id: 'c1', label: 'Brand', value: 'x' }] },
            'not json',
          ]),
        ],
        env,
      );
      assert.equal(refused.code, 1, refused.stderr);
      assert.match(refused.stderr, /2 of 3 lines are not valid real-time events; nothing was published/);
      assert.match(refused.stderr, /line 2: real-time event: .*data\[0\]\.label/);
      assert.match(refused.stderr, /line 3: real-time event: payload is not UTF-8 JSON/);

      const realtime = await runLattice(
        [
          'vss',
          'publish',
          'realtime',
          file('realtime.jsonl', [
            {
              timestamp: 1000,
              entity_label: 'catalog',
              data: [{ id: 'c1', label: 'brand', value: 'published' }],
            },
          ]),
        ],
        env,
      );
      assert.equal(realtime.code, 0, realtime.stderr);
      assert.match(
        realtime.stdout,
        /^Published 1 real-time events from .*realtime\.jsonl to vss-realtime\.$/m,
      );
      await eventually(
        async () => (await nearest(c1.embedding)).brand === 'published',
        60_000,
        'the real-time event to change c1',
      );

      // An embedding event adds a point to the demo's version: Search finds it by its vector.
      const model = (await (await fetch(`${adminUrl}/models/catalog/products`)).json()) as {
        versions: { version: number }[];
      };
      const version = Math.max(...model.versions.map((v) => v.version));
      const vector = c1.embedding.map((x, i) => (i % 2 === 0 ? -x : x * 3));
      const embeddings = await runLattice(
        [
          'vss',
          'publish',
          'embeddings',
          file('embeddings.jsonl', [
            {
              entity: 'catalog',
              model_name: 'products',
              candidate_id: 'p-published',
              version,
              index_space: {
                variants_version_map: JSON.stringify({ all: version }),
                variants_index_map: JSON.stringify({ all: true }),
                embedding: vector,
                operation: 'A',
                payload: JSON.stringify({ brand: 'fresh' }),
              },
            },
          ]),
        ],
        env,
      );
      assert.equal(embeddings.code, 0, embeddings.stderr);
      assert.match(embeddings.stdout, /^Published 1 embedding events from .* to vss-embeddings\.$/m);
      await eventually(
        async () => (await nearest(vector)).id === 'p-published',
        60_000,
        'the embedding event to add p-published',
      );
    } finally {
      vss.close();
    }

    // A poison event: valid as an event, for an entity that has no store; dead-lettered on apply.
    const poison = await runLattice(
      [
        'vss',
        'publish',
        'realtime',
        file('poison.jsonl', [
          { timestamp: 1, entity_label: 'nowhere', data: [{ id: 'x1', label: 'brand', value: 'y' }] },
        ]),
      ],
      env,
    );
    assert.equal(poison.code, 0, poison.stderr);
    let listed = '';
    await eventually(
      async () => {
        const letters = await runLattice(['vss', 'dead-letters', '--address', opsUrl], {
          LATTICE_DATA_DIR: dataDir,
        });
        assert.equal(letters.code, 0, letters.stderr);
        listed = letters.stdout;
        return /^vss-realtime: 1 dead letter/m.test(listed);
      },
      60_000,
      'the poison event to be dead-lettered',
    );
    assert.match(listed, /^vss-embeddings: 0 dead letter\(s\) on vss-embeddings-dlq$/m);
    const id = /^ {2}(vss-realtime:vss-consumers:\d+) {2}partition \d+, key x1, 1 attempt\(s\), \S+$/m.exec(
      listed,
    )?.[1];
    assert.ok(id, listed);
    assert.match(listed, /^ {4}reason: unknown entity "nowhere": it has no store/m);
    assert.match(listed, /^ {4}payload: \{"timestamp":1,"entity_label":"nowhere"/m);
    // Listing leaves it for replay.
    const again = await runLattice(['vss', 'dead-letters', '--json', '--address', opsUrl], {
      LATTICE_DATA_DIR: dataDir,
    });
    const listings = JSON.parse(again.stdout) as {
      topic: string;
      deadLetters: { id: string; reason: string }[];
    }[];
    assert.deepEqual(
      listings.find((l) => l.topic === 'vss-realtime')?.deadLetters.map((d) => d.id),
      [id],
    );
    // The dead-lettering was logged once, with the id.
    const logged = `${up.output.stdout}${up.output.stderr}`
      .split('\n')
      .filter((line) => line.includes(`"deadLetterId":"${id}"`));
    assert.equal(logged.length, 1, logged.join('\n'));
    assert.match(logged[0]!, /"msg":"queue message dead-lettered"/);
    assert.match(logged[0]!, /"lastError":"unknown entity \\"nowhere\\": it has no store/);

    // The demo model scores pairs and slates (one row each), as docs/getting-started.md's commands show.
    const predict = [
      'predict',
      '--model-config',
      'catalog_ranker',
      '--context',
      'user_id=u1',
      '--address',
      orchestrator,
    ];
    const targets = ['--target-id', 'c1', '--target-id', 'c2', '--target-id', 'c3'];
    const pairs = await runLattice([...predict, ...targets, '--kind', 'pair', '--pairs', '0-1,1-2'], env);
    assert.equal(pairs.code, 0, pairs.stderr);
    assert.match(
      pairs.stdout,
      /^ROW\s+SLATE_CTR\s+PREFERENCE\s+ERROR\npair 0\s+0\.\d+\s+0\.\d+\s+-\npair 1\s+0\.\d+\s+0\.\d+\s+-$/m,
    );
    const slates = await runLattice([...predict, ...targets, '--kind', 'slate', '--slates', '0.1.2,2'], env);
    assert.equal(slates.code, 0, slates.stderr);
    assert.match(
      slates.stdout,
      /^ROW\s+SLATE_CTR\s+PREFERENCE\s+ERROR\nslate 0\s+0\.\d+\s+0\.\d+\s+-\nslate 1\s+0\.\d+\s+0\.5\s+-$/m,
    );
  } finally {
    up.child.kill('SIGTERM');
    await up.exited;
  }
});
