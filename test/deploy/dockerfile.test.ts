/**
 * The Dockerfile checked offline (no container engine runs here): a build stage that copies everything
 * the build reads (derived from package.json's scripts and files and tsconfig.build.json) from a build
 * context .dockerignore does not cut, and a runtime stage that runs the compiled `lattice` command as
 * a numeric non-root user, exposes exactly the ports its default command listens on, and checks its
 * health with the probe script it ships.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, test } from 'node:test';
import { loadSettings } from '../../src/platform/settings/index.js';
import {
  type DockerInstruction,
  type DockerStage,
  dockerfileStages,
  execForm,
  imageEnv,
  parseDockerEnv,
  root,
} from './support/deploy-files.js';
import { dockerignoreRules, inBuildContext } from './support/dockerignore.js';
import { dockerfileProcess } from './support/lattice-processes.js';
import { listeningPorts } from './support/listening-ports.js';

const stages = dockerfileStages();
const build = stages[0]!;
const runtime = stages.at(-1)!;
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  bin: Record<string, string>;
  files: string[];
  scripts: Record<string, string>;
  engines: { node: string };
};

/** Where the runtime stage keeps the package. */
const PACKAGE_DIR = '/opt/lattice';

function instructions(stage: DockerStage, keyword: string): DockerInstruction[] {
  return stage.instructions.filter((i) => i.keyword === keyword);
}

interface Copy {
  from: string | undefined;
  sources: string[];
  destination: string;
}

function copies(stage: DockerStage): Copy[] {
  return instructions(stage, 'COPY').map((instruction) => {
    const words = instruction.rest.split(/\s+/);
    const options = words.filter((w) => w.startsWith('--'));
    const paths = words.filter((w) => !w.startsWith('--'));
    const from = options.find((o) => o.startsWith('--from='))?.slice('--from='.length);
    return { from, sources: paths.slice(0, -1), destination: paths.at(-1)! };
  });
}

/** Whether a copied source covers `path` (the path itself or a directory above it). */
function covered(sources: string[], path: string): boolean {
  const clean = (p: string) => posix.normalize(p).replace(/\/+$/, '');
  return sources.some(
    (source) => clean(path) === clean(source) || clean(path).startsWith(`${clean(source)}/`),
  );
}

/** The scripts and, transitively, the modules beside them that they import (`from './x.mjs'`). */
function withImports(scripts: string[]): string[] {
  const found = new Set<string>();
  const visit = (path: string) => {
    if (found.has(path)) return;
    found.add(path);
    const text = readFileSync(join(root, path), 'utf8');
    for (const [, relative] of text.matchAll(/from '(\.\.?\/[^']+)'/g)) {
      visit(posix.join(posix.dirname(path), relative!));
    }
  };
  for (const script of scripts) visit(script);
  return [...found];
}

describe('Dockerfile (offline)', () => {
  test('a build stage on the Node LTS line CI tests besides the oldest supported, then a slim runtime on the same line', () => {
    assert.ok(stages.length >= 2, 'a multi-stage build');
    // scripts/node26.sh pins the second Node that CI runs the whole suite on: the image runs that one,
    // never an untested line, and never the oldest line engines.node still admits.
    const tested = /version="\$\{LATTICE_NODE26_VERSION:-(\d+)\./.exec(
      readFileSync(join(root, 'scripts/node26.sh'), 'utf8'),
    )?.[1];
    assert.ok(tested, 'scripts/node26.sh pins a Node version');
    const oldest = /(\d+)/.exec(packageJson.engines.node)![1]!;
    assert.ok(
      Number(tested) > Number(oldest),
      `the image's Node ${tested} is newer than the oldest supported, ${oldest}`,
    );
    assert.equal(Number(tested) % 2, 0, 'an even (LTS) Node line');
    assert.match(build.image, new RegExp(`^node:${tested}-[a-z]+$`), 'build stage image');
    assert.match(runtime.image, new RegExp(`^node:${tested}-[a-z]+-slim$`), 'runtime image');
    const runs = instructions(build, 'RUN').map((i) => i.rest);
    for (const step of [/npm ci\b/, /npm run build\b/, /npm pack\b/, /npm prune --omit=dev\b/]) {
      assert.ok(
        runs.some((run) => step.test(run)),
        `the build stage runs ${step}`,
      );
    }
  });

  test('the build stage copies everything the install and the build read', () => {
    const sources = copies(build)
      .filter((c) => c.from === undefined)
      .flatMap((c) => c.sources);
    const tsconfig = JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8')) as {
      extends?: string;
      include: string[];
    };
    const scripts = withImports(
      ['install', 'prepare', 'build'].flatMap((name) =>
        [...(packageJson.scripts[name] ?? '').matchAll(/node ((?:scripts|native)\/\S+)/g)].map((m) => m[1]!),
      ),
    );
    const needed = [
      'package.json',
      'package-lock.json',
      // onnxruntime-node's install switch and save-exact live there.
      '.npmrc',
      // `buf generate` (scripts/gen-proto.mjs) reads these.
      'buf.yaml',
      'buf.gen.yaml',
      ...scripts,
      'tsconfig.build.json',
      ...(tsconfig.extends ? [tsconfig.extends.replace(/^\.\//, '')] : []),
      ...tsconfig.include,
      // The published files that are sources (dist/ is built).
      ...packageJson.files.filter((file) => !file.startsWith('dist/')),
    ];
    assert.ok(scripts.length >= 3, `install, prepare and build scripts found: ${scripts}`);
    for (const path of needed) {
      assert.ok(existsSync(join(root, path)), `${path} exists`);
      assert.ok(covered(sources, path), `the build stage does not copy ${path}`);
    }
  });

  test('every file the Dockerfile copies exists and is in the build context; the context leaves out the rest', () => {
    const rules = dockerignoreRules();
    const names = new Set(stages.map((s) => s.name));
    for (const stage of stages) {
      for (const copy of copies(stage)) {
        if (copy.from !== undefined) {
          assert.ok(names.has(copy.from), `COPY --from=${copy.from}: no such stage`);
          continue;
        }
        for (const source of copy.sources) {
          assert.ok(existsSync(join(root, source)), `COPY ${source}: no such file`);
          assert.ok(
            inBuildContext(source, rules),
            `COPY ${source}: .dockerignore leaves it out of the context`,
          );
        }
      }
    }
    for (const path of [
      'node_modules/yaml/package.json',
      '.git/HEAD',
      'dist/src/cli/main.js',
      'src/gen/whatever.ts',
      '.lattice/sql',
      'test/deploy/dockerfile.test.ts',
      'bench/run.ts',
      'npm-debug.log',
    ]) {
      assert.equal(inBuildContext(path, rules), false, `${path} must not be sent to the builder`);
    }
    assert.equal(inBuildContext('src/cli/main.ts', rules), true);
  });

  test('the runtime stage holds the packed package and runs bin/lattice.js as a numeric non-root user', () => {
    const [fromBuild] = copies(runtime).filter((c) => c.from !== undefined);
    assert.deepEqual(fromBuild, { from: build.name, sources: [PACKAGE_DIR], destination: PACKAGE_DIR });
    const runs = instructions(build, 'RUN')
      .map((i) => i.rest)
      .join('\n');
    assert.match(runs, new RegExp(`tar -xzf \\S+\\.tgz -C ${PACKAGE_DIR} --strip-components=1`));
    assert.match(runs, new RegExp(`cp -a node_modules ${PACKAGE_DIR}/node_modules`));

    const user = instructions(runtime, 'USER').at(-1)?.rest;
    assert.match(user ?? '', /^\d+(:\d+)?$/, 'USER must be numeric, so runAsNonRoot can verify it');
    const uid = Number(user!.split(':')[0]);
    assert.ok(uid > 0, 'USER must not be root');
    assert.match(
      instructions(runtime, 'RUN')
        .map((i) => i.rest)
        .join('\n'),
      new RegExp(`useradd .*--uid ${uid}\\b`),
      'the user exists in the image',
    );

    const entrypoint = execForm(instructions(runtime, 'ENTRYPOINT').at(-1)!);
    assert.deepEqual(entrypoint, ['node', posix.join(PACKAGE_DIR, packageJson.bin.lattice!)]);
  });

  test('its environment is valid settings, and it exposes exactly the ports its default command listens on', () => {
    const env = imageEnv(stages);
    const settings = loadSettings({ env });
    assert.equal(settings.host, '0.0.0.0', 'servers in a container bind every interface');
    const process = dockerfileProcess(stages);
    const exposed = instructions(runtime, 'EXPOSE')
      .flatMap((i) => i.rest.split(/\s+/))
      .map(Number)
      .sort();
    const listening = listeningPorts(process.argv, settings).map((p) => p.port);
    assert.deepEqual(exposed, [...new Set(listening)].sort());
  });

  test('its HEALTHCHECK runs the shipped probe, which checks /readyz on the ops port of the default command', () => {
    const healthcheck = instructions(runtime, 'HEALTHCHECK').at(-1);
    assert.ok(healthcheck, 'a HEALTHCHECK');
    const command = execForm(healthcheck);
    assert.deepEqual(command, ['node', `${PACKAGE_DIR}/healthcheck.mjs`]);
    const shipped = copies(build).find((c) => c.destination === `${PACKAGE_DIR}/healthcheck.mjs`);
    assert.deepEqual(shipped?.sources, ['deploy/docker/healthcheck.mjs']);
    // With no arguments the probe reads LATTICE_METRICS_PORT (default 9464): the settings' metrics.port.
    const probe = readFileSync(join(root, 'deploy/docker/healthcheck.mjs'), 'utf8');
    assert.match(probe, /env\.LATTICE_METRICS_PORT \|\| '9464'/);
    const env = imageEnv(stages);
    const settings = loadSettings({ env });
    assert.equal(Number(env.LATTICE_METRICS_PORT || '9464'), settings.metrics.port);
    const ops = listeningPorts(dockerfileProcess(stages).argv, settings).find((p) => p.name === 'ops');
    assert.equal(ops?.port, settings.metrics.port);
  });

  test('the build stage installs onnxruntime-node without downloading, as package.json does for the repository', () => {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      allowScripts: Record<string, boolean>;
    };
    assert.equal(manifest.allowScripts['onnxruntime-node'], false);
    // A key npm does not know in .npmrc makes every npm command warn.
    assert.doesNotMatch(readFileSync(join(root, '.npmrc'), 'utf8'), /onnxruntime/);
    const env = Object.assign({}, ...instructions(build, 'ENV').map((i) => parseDockerEnv(i.rest)));
    assert.equal(env.ONNXRUNTIME_NODE_INSTALL, 'skip');
  });
});
