/**
 * The package as a user gets it: `npm run build`, `npm pack`, the tarball installed into an empty
 * project from the machine's npm cache, then from that project `npx lattice --help`, `lattice up` on
 * free ports and a fresh data directory answering a predict and a vss search (through `lattice/client`
 * and `lattice/vss-client`, each imported by a plain .mjs file there, with the caller token `lattice
 * up` was started to require), with no TypeScript loader in the process.
 *
 * Slow (a build, a pack, an install that compiles hnswlib-node and the parallel graph builder, a start
 * that onboards the vss demo): about a minute on an idle machine. It runs in `npm test`; it skips with the reason printed when npm
 * cannot install here (no cache and no registry), and fails on CI.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { eventually } from '../support/servers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'lattice-pack-'));
const project = join(work, 'project');

/** How long `lattice up` may take to be ready: it onboards the vss demo; a busy 2-core machine is slow. */
const START_TIMEOUT_MS = 90_000;

function npm(args: string[], cwd: string, env: Record<string, string> = {}) {
  const result = spawnSync('npm', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    maxBuffer: 64 * 1024 * 1024,
  });
  return { status: result.status, stdout: result.stdout, output: `${result.stdout}${result.stderr}` };
}

/**
 * Installs the tarball into the empty project from the npm cache. `--offline` first: npm ci fills the
 * cache with every tarball, but npm 11 resolves a new project's ranges from full packuments, which
 * npm ci never fetches; so without them `--prefer-offline` reads only those (small) documents from
 * the registry and still every tarball from the cache. Returns why it could not install, if so.
 */
function installTarball(tarball: string): { mode: string; output: string } | { skip: string } {
  // onnxruntime-node's install step would download CUDA libraries (the CPU build ships in the package).
  const env = { ONNXRUNTIME_NODE_INSTALL: 'skip' };
  const common = ['install', '--no-audit', '--no-fund', tarball];
  const offline = npm([...common, '--offline'], project, env);
  if (offline.status === 0) return { mode: '--offline', output: offline.output };
  if (!offline.output.includes('ENOTCACHED')) assert.fail(`npm install --offline failed:\n${offline.output}`);
  const preferOffline = npm([...common, '--prefer-offline'], project, env);
  if (preferOffline.status === 0) return { mode: '--prefer-offline', output: preferOffline.output };
  if (/ENOTCACHED|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT/.test(preferOffline.output)) {
    return { skip: `npm cannot install offline here:\n${preferOffline.output.slice(-2000)}` };
  }
  assert.fail(`npm install --prefer-offline failed:\n${preferOffline.output}`);
}

/** The command lines of `pid`'s child processes (a tsx loader would run an esbuild service among them). */
function childCommands(pid: number): string[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => {
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return ppid === pid ? [readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ')] : [];
      } catch {
        return []; // exited meanwhile
      }
    });
}

function kib(status: string, field: string): number {
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
}

/** The caller `lattice up` below requires (LATTICE_CALLER_TOKENS), as the scripts send it. */
const CALLER = { callerId: 'app', callerToken: 'pack-s3cret' };

const clientScript = `import { OrchestratorClient } from 'lattice/client';

const client = new OrchestratorClient(process.argv[2], ${JSON.stringify(CALLER)});
try {
  const { targets } = await client.pointWise({
    modelConfigId: 'catalog_ranker',
    context: { user_id: 'u1' },
    targets: [{ id: 'c1' }, { id: 'c2' }],
    deadlineMs: 10000,
  });
  console.log(JSON.stringify(targets.map((t) => ({ id: t.id, error: t.error, final_score: t.values.final_score }))));
} finally {
  client.close();
}
`;

const vssScript = `import { VssClient } from 'lattice/vss-client';

const vss = new VssClient(process.argv[2], ${JSON.stringify(CALLER)});
try {
  const page = await vss.search({
    entity: 'catalog', model: 'products', variant: 'all', id: 'c1', pageSize: 10, attributes: ['category'],
  });
  const [embedding] = await vss.getEmbeddings({ entity: 'catalog', model: 'products', ids: ['c1'] });
  const scores = await vss.scoreCandidates({
    entity: 'catalog', model: 'products', vector: embedding.embedding, ids: page.candidates.map((c) => c.id),
  });
  console.log(JSON.stringify({ found: page.candidates.length, category: page.candidates[0]?.attributes.category, dimension: embedding.embedding.length, scored: scores.filter((s) => s.found).length }));
} finally {
  vss.close();
}
`;

describe('the packed package (slow)', () => {
  const children: ChildProcess[] = [];
  after(() => {
    for (const child of children) child.kill('SIGKILL');
    rmSync(work, { recursive: true, force: true });
  });

  test('installs into an empty project, whose lattice up answers a predict and a search', {
    timeout: 240_000,
  }, async (t) => {
    // Built with the build script, packed without scripts: `npm pack` would run `prepare`, which
    // regenerates src/gen (buf cleans it first) under the tests running beside this one.
    const build = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: root, encoding: 'utf8' });
    assert.equal(build.status, 0, `${build.stdout}${build.stderr}`);
    const pack = npm(['pack', '--ignore-scripts', '--json', '--pack-destination', work], root);
    assert.equal(pack.status, 0, pack.output);
    const [packed] = JSON.parse(pack.stdout) as {
      filename: string;
      size: number;
      unpackedSize: number;
      files: { path: string }[];
    }[];
    assert.ok(packed);
    const shipped = packed.files.map((f) => f.path);
    assert.ok(
      shipped.includes('dist/src/cli/main.js') && shipped.includes('dist/src/orchestrator/client.d.ts'),
    );
    assert.ok(shipped.includes('dist/src/vss/client.js') && shipped.includes('dist/src/vss/client.d.ts'));
    assert.ok(shipped.includes('proto/vss/v1/vss.proto') && shipped.includes('bin/lattice.js'));
    assert.ok(shipped.includes('dist/console/index.html') && shipped.includes('dist/console/assets/app.js'));
    assert.deepEqual(
      shipped.filter(
        (f) => /^(src|test|bench|scripts)\//.test(f) || (f.endsWith('.ts') && !f.endsWith('.d.ts')),
      ),
      [],
    );
    t.diagnostic(
      `tarball ${packed.size} bytes, unpacked ${packed.unpackedSize} bytes, ${shipped.length} files`,
    );

    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      `${JSON.stringify({ name: 'lattice-user', version: '1.0.0', private: true, type: 'module' })}\n`,
    );
    const installed = installTarball(join(work, packed.filename));
    if ('skip' in installed) {
      if (process.env.CI) assert.fail(`${installed.skip}\nCI requires it`);
      t.skip(installed.skip);
      return;
    }
    t.diagnostic(`installed with npm install ${installed.mode}`);
    assert.doesNotMatch(installed.output, /EBADENGINE/, installed.output);
    const lattice = join(project, 'node_modules', 'lattice');
    assert.ok(!existsSync(join(lattice, 'src')), 'the package ships no sources');
    assert.ok(!existsSync(join(project, 'node_modules', 'tsx')), 'tsx is a dev dependency only');
    // The install step compiled the parallel graph builder from the shipped sources.
    assert.ok(
      existsSync(join(lattice, 'native/hnsw-parallel/build/Release/hnsw_parallel.node')),
      `the parallel graph builder was compiled at install:\n${installed.output}`,
    );

    const help = spawnSync('npx', ['lattice', '--help'], { cwd: project, encoding: 'utf8' });
    assert.equal(help.status, 0, `${help.stdout}${help.stderr}`);
    assert.match(help.stdout, /Usage: lattice <command>/);

    const dataDir = join(work, 'data');
    const started = Date.now();
    const child = spawn(process.execPath, [join(project, 'node_modules', '.bin', 'lattice'), 'up'], {
      cwd: project,
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        LATTICE_DATA_DIR: dataDir,
        LATTICE_GRPC_PORT: '0',
        LATTICE_METRICS_PORT: '0',
        LATTICE_ORCHESTRATOR_PORT: '0',
        LATTICE_FEATURESTORE_PORT: '0',
        LATTICE_MODELSERVER_PORT: '0',
        LATTICE_COMPUTE_PORT: '0',
        LATTICE_VSS_SERVING_PORT: '0',
        LATTICE_VSS_ADMIN_PORT: '0',
        LATTICE_LOG_LEVEL: 'warn',
        // The orchestrator calls the feature store as lattice-orchestrator, which then needs a token too.
        LATTICE_CALLER_TOKENS: `${CALLER.callerId}:${CALLER.callerToken},lattice-orchestrator:fs-s3cret`,
        LATTICE_FEATURE_STORE_CALLER_TOKEN: 'fs-s3cret',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const output = { stdout: '', stderr: '' };
    child.stdout.on('data', (d: Buffer) => {
      output.stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      output.stderr += d.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await eventually(
      () => output.stdout.includes('Ctrl-C') || child.exitCode !== null,
      START_TIMEOUT_MS,
      `lattice up to start (stderr: ${output.stderr})`,
    );
    assert.match(output.stdout, /Ctrl-C/, output.stderr);
    const readyMs = Date.now() - started;
    const pid = child.pid!;
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    t.diagnostic(
      `lattice up ready in ${readyMs} ms; RSS ${Math.round(kib(status, 'VmRSS') / 1024)} MB, peak ${Math.round(kib(status, 'VmHWM') / 1024)} MB`,
    );

    // No TypeScript loader: not on the command line, not in the environment, no esbuild service.
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    assert.ok(
      !cmdline.some((arg) => /tsx|--import|--loader|--experimental-strip-types/.test(arg)),
      cmdline.join(' '),
    );
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
    assert.doesNotMatch(environ, /NODE_OPTIONS=[^\0]*tsx/);
    assert.deepEqual(
      childCommands(pid).filter((c) => c.includes('esbuild')),
      [],
    );

    // The web console ships in the package: its page, its bundle and Swagger UI's files are served.
    const consoleUrl = /Web console \(API docs at \/docs\)\s+(\S+)/.exec(output.stdout)?.[1];
    assert.ok(consoleUrl, output.stdout);
    for (const path of ['', 'assets/app.js', 'docs', 'docs/swagger-ui-bundle.js']) {
      assert.equal((await fetch(`${consoleUrl}${path}`)).status, 200, `${consoleUrl}${path}`);
    }

    // A predict through lattice/client, from a plain .mjs file in the user's project.
    const orchestrator = /gRPC orchestrator\.v1 .*\s+(\S+)\n/.exec(output.stdout)?.[1];
    assert.ok(orchestrator, output.stdout);
    writeFileSync(join(project, 'predict.mjs'), clientScript);
    const predict = spawnSync(process.execPath, ['predict.mjs', orchestrator], {
      cwd: project,
      encoding: 'utf8',
    });
    assert.equal(predict.status, 0, `${predict.stdout}${predict.stderr}`);
    const targets = JSON.parse(predict.stdout) as { id: string; error: string; final_score: unknown }[];
    assert.deepEqual(
      targets.map((target) => target.id),
      ['c1', 'c2'],
    );
    for (const target of targets) {
      assert.equal(target.error, '', JSON.stringify(target));
      assert.equal(typeof target.final_score, 'number', JSON.stringify(target));
    }

    // A search of the vss demo that lattice up onboarded on the fresh data directory.
    const vssAddress = /gRPC vss\.v1\.SimilaritySearch\s+(\S+)\n/.exec(output.stdout)?.[1];
    assert.ok(vssAddress, output.stdout);
    writeFileSync(join(project, 'search.mjs'), vssScript);
    const search = spawnSync(process.execPath, ['search.mjs', vssAddress], {
      cwd: project,
      encoding: 'utf8',
    });
    assert.equal(search.status, 0, `${search.stdout}${search.stderr}`);
    const found = JSON.parse(search.stdout) as {
      found: number;
      category: unknown;
      dimension: number;
      scored: number;
    };
    assert.equal(found.found, 10, search.stdout);
    assert.equal(typeof found.category, 'string', search.stdout);
    assert.ok(found.dimension > 0, search.stdout);
    assert.equal(found.scored, 10, search.stdout);
    // Without the caller token the same servers refuse.
    writeFileSync(join(project, 'anonymous.mjs'), vssScript.replace(JSON.stringify(CALLER), '{}'));
    const anonymous = spawnSync(process.execPath, ['anonymous.mjs', vssAddress], {
      cwd: project,
      encoding: 'utf8',
    });
    assert.notEqual(anonymous.status, 0);
    assert.match(anonymous.stderr, /UNAUTHENTICATED/);

    child.kill('SIGTERM');
    assert.equal(await exited, 0, output.stderr);
  });
});
