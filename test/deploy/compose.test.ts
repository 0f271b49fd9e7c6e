/**
 * deploy/compose.yaml checked offline (no container engine runs here): parsed as compose parses it
 * (YAML merge keys included), with only known keys, the infrastructure and every Lattice component as
 * services built from the repository's Dockerfile, dependencies that exist and can become true,
 * declared volumes, and published ports and health checks that match what each process listens on.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { loadSettings } from '../../src/platform/settings/index.js';
import { composeFile, composePath, root, type Yaml } from './support/deploy-files.js';
import { composeProcesses, LATTICE_IMAGE, type LatticeProcess } from './support/lattice-processes.js';
import { commandWords, type ListeningPort, listeningPorts } from './support/listening-ports.js';

const compose = composeFile();
const services = compose.services as Record<string, Yaml>;
const processes = new Map(composeProcesses(compose).map((p) => [p.where.split(' ').at(-1)!, p]));

const TOP_LEVEL = new Set(['name', 'services', 'volumes', 'networks', 'configs', 'secrets']);
/** The service keys of the compose specification this file may use; a misspelt key fails here. */
const SERVICE_KEYS = new Set([
  'image',
  'build',
  'command',
  'entrypoint',
  'environment',
  'env_file',
  'ports',
  'expose',
  'volumes',
  'tmpfs',
  'depends_on',
  'healthcheck',
  'restart',
  'init',
  'user',
  'read_only',
  'working_dir',
  'networks',
  'labels',
  'stop_grace_period',
  'stop_signal',
  'deploy',
  'logging',
  'profiles',
]);
const HEALTHCHECK_KEYS = new Set(['test', 'interval', 'timeout', 'retries', 'start_period', 'disable']);
const CONDITIONS = new Set(['service_started', 'service_healthy', 'service_completed_successfully']);
const INFRASTRUCTURE = ['etcd', 'nats', 'postgres', 'redis', 'qdrant', 'qdrant-production'];
const COMPONENTS = [
  'orchestrator',
  'featurestore serve',
  'modelserver',
  'compute',
  'vss serving',
  'vss consumers',
  'vss admin',
];

function portsOf(process: LatticeProcess): ListeningPort[] {
  return listeningPorts(process.argv, loadSettings({ env: process.env }));
}

/**
 * What a Lattice service's health check probes: its own `healthcheck.mjs` arguments, or the image's
 * HEALTHCHECK (the probe without arguments: /readyz on the settings' metrics port); undefined if off.
 */
function probedPort(name: string): { protocol: 'grpc' | 'http'; port: number } | undefined {
  const service = services[name];
  const process = processes.get(name)!;
  if (service.healthcheck?.disable === true) return undefined;
  const test: string[] | undefined = service.healthcheck?.test;
  if (test === undefined) return { protocol: 'http', port: loadSettings({ env: process.env }).metrics.port };
  assert.deepEqual(test.slice(0, 3), ['CMD', 'node', '/opt/lattice/healthcheck.mjs'], name);
  const [mode, port] = test.slice(3);
  if (mode === undefined) return { protocol: 'http', port: loadSettings({ env: process.env }).metrics.port };
  assert.ok(mode === '--grpc' || mode === '--http', `${name}: healthcheck mode ${mode}`);
  return { protocol: mode === '--grpc' ? 'grpc' : 'http', port: Number(port) };
}

describe('compose file (offline)', () => {
  test('only known top-level and service keys', () => {
    for (const key of Object.keys(compose)) {
      assert.ok(TOP_LEVEL.has(key) || key.startsWith('x-'), `top-level key ${key}`);
    }
    for (const [name, service] of Object.entries(services)) {
      for (const key of Object.keys(service)) assert.ok(SERVICE_KEYS.has(key), `${name}: unknown key ${key}`);
      for (const key of Object.keys(service.healthcheck ?? {})) {
        assert.ok(HEALTHCHECK_KEYS.has(key), `${name}: unknown healthcheck key ${key}`);
      }
      assert.equal(typeof service.image, 'string', `${name}: image`);
    }
  });

  test('the infrastructure, and every Lattice component alone on the distributed adapters', () => {
    for (const name of INFRASTRUCTURE) assert.ok(services[name], `service ${name}`);
    const running = [...processes.values()].filter((p) => portsOf(p).length > 0);
    assert.deepEqual(running.map((p) => commandWords(p.argv).join(' ')).sort(), [...COMPONENTS].sort());
    for (const process of processes.values()) {
      const settings = loadSettings({ env: process.env });
      assert.deepEqual(
        [
          settings.configStore.kind,
          settings.queue.kind,
          settings.sql.kind,
          settings.cache.kind,
          settings.vss.vectorDb.kind,
          settings.vss.clusters.production.vectorDb.kind,
        ],
        ['etcd', 'jetstream', 'postgres', 'redis', 'qdrant', 'qdrant'],
        process.where,
      );
    }
  });

  test('Lattice services are built from the repository Dockerfile; long-running ones restart', () => {
    for (const [name, service] of Object.entries(services)) {
      if (!LATTICE_IMAGE.test(service.image)) continue;
      const context = resolve(dirname(composePath), service.build?.context ?? '.');
      assert.equal(context, resolve(root), `${name}: build context`);
      assert.ok(existsSync(join(context, service.build.dockerfile ?? 'Dockerfile')), `${name}: Dockerfile`);
      const oneShot = portsOf(processes.get(name)!).length === 0;
      assert.equal(service.restart, oneShot ? 'no' : 'unless-stopped', `${name}: restart`);
    }
  });

  test('dependencies name services, with conditions that can become true', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const [target, { condition }] of Object.entries(
        (service.depends_on ?? {}) as Record<string, { condition: string }>,
      )) {
        const dependency = services[target];
        assert.ok(dependency, `${name} depends on ${target}, which is no service`);
        assert.ok(CONDITIONS.has(condition), `${name} → ${target}: condition ${condition}`);
        if (condition === 'service_healthy') {
          const lattice = LATTICE_IMAGE.test(dependency.image);
          const checked = lattice
            ? probedPort(target) !== undefined
            : Array.isArray(dependency.healthcheck?.test);
          assert.ok(checked, `${name} waits for ${target} to be healthy, which has no health check`);
        }
        if (condition === 'service_completed_successfully') {
          assert.equal(
            dependency.restart,
            'no',
            `${name} waits for ${target} to finish: it must not restart`,
          );
        }
      }
    }
  });

  test('named volumes are declared', () => {
    const declared = new Set(Object.keys(compose.volumes ?? {}));
    for (const [name, service] of Object.entries(services)) {
      for (const volume of (service.volumes ?? []) as string[]) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('.') || source.startsWith('/')) continue;
        assert.ok(declared.has(source), `${name}: volume ${source} is not declared`);
      }
    }
  });

  test('published ports are ports the process listens on, on loopback, each host port once', () => {
    const hostPorts = new Set<string>();
    for (const [name, service] of Object.entries(services)) {
      for (const mapping of (service.ports ?? []) as string[]) {
        const match = /^(?:([\d.]+):)?(\d+):(\d+)$/.exec(mapping);
        assert.ok(match, `${name}: port mapping ${mapping}`);
        const [, ip, host, container] = match;
        assert.equal(ip, '127.0.0.1', `${name}: publish on loopback only`);
        assert.ok(!hostPorts.has(host!), `${name}: host port ${host} published twice`);
        hostPorts.add(host!);
        const process = processes.get(name);
        if (process) {
          assert.ok(
            portsOf(process).some((p) => p.port === Number(container)),
            `${name}: publishes ${container}, which lattice ${process.argv.join(' ')} does not listen on`,
          );
        }
      }
    }
  });

  test("each long-running Lattice service's health check probes a server of its own", () => {
    for (const [name, process] of processes) {
      const listening = portsOf(process);
      const probed = probedPort(name);
      if (listening.length === 0) {
        assert.equal(probed, undefined, `${name} exits when done: no health check`);
        continue;
      }
      assert.ok(probed, `${name}: no health check`);
      const target = listening.find((p) => p.port === probed.port);
      assert.ok(target, `${name}: the health check probes ${probed.port}, where nothing of it listens`);
      assert.equal(target.protocol, probed.protocol, `${name}: the health check speaks ${probed.protocol}`);
      // An HTTP probe must reach the ops server (/readyz), not the admin API.
      if (probed.protocol === 'http') assert.equal(target.name, 'ops', name);
    }
  });
});
