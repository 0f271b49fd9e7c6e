/**
 * The deployment files against the code they configure: every LATTICE_* variable they mention is one
 * the settings loader reads (its own table, src/platform/settings/load-settings.ts), every process's
 * environment is valid settings, the distributed processes reach servers declared beside them, and
 * every command line is one the CLI accepts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { checkExposure, type ServerAuth } from '../../src/cli/exposure.js';
import { type LoadedSettings, loadSettings } from '../../src/platform/settings/index.js';
import { cliAccepts } from './support/cli-check.js';
import {
  composeFile,
  deployFiles,
  kubernetesDocuments,
  repoPath,
  type Yaml,
} from './support/deploy-files.js';
import {
  allLatticeProcesses,
  composeProcesses,
  knownLatticeVariables,
  kubernetesProcesses,
  type LatticeProcess,
  podTemplate,
  unknownLatticeVariables,
  WORKLOAD_KINDS,
} from './support/lattice-processes.js';
import { commandWords, listeningPorts } from './support/listening-ports.js';

/** The servers a process's distributed adapters dial, as [setting, host, port]. */
function dialledServers(settings: LoadedSettings): [string, string, number][] {
  const servers: [string, string, number][] = [];
  const add = (setting: string, address: string, defaultPort: number) => {
    const url = new URL(address.includes('://') ? address : `grpc://${address}`);
    servers.push([setting, url.hostname, url.port === '' ? defaultPort : Number(url.port)]);
  };
  if (settings.configStore.kind === 'etcd') {
    for (const endpoint of settings.configStore.endpoints) add('configStore.endpoints', endpoint, 2379);
  }
  if (settings.queue.kind === 'jetstream')
    for (const server of settings.queue.servers) add('queue.servers', server, 4222);
  if (settings.sql.kind === 'postgres') add('sql.url', settings.sql.url, 5432);
  if (settings.cache.kind === 'redis') add('cache.url', settings.cache.url, 6379);
  if (settings.vss.vectorDb.kind === 'qdrant') add('vss.vectorDb.url', settings.vss.vectorDb.url!, 6333);
  const production = settings.vss.clusters.production.vectorDb;
  if (production.kind === 'qdrant') add('vss.clusters.production.vectorDb.url', production.url!, 6333);
  if (settings.orchestrator.featureStoreTarget !== undefined) {
    add('orchestrator.featureStoreTarget', settings.orchestrator.featureStoreTarget, 0);
  }
  return servers;
}

describe('deployment settings', () => {
  test('every LATTICE_* variable in the deployment files is one Lattice reads', () => {
    const known = knownLatticeVariables();
    assert.ok(known.has('LATTICE_QDRANT_URL') && known.size > 50, 'the settings table was not read');
    const unknown = deployFiles().flatMap((file) =>
      unknownLatticeVariables(readFileSync(file, 'utf8'), known).map((name) => `${repoPath(file)}: ${name}`),
    );
    assert.deepEqual(unknown, []);
  });

  test('the check catches a variable Lattice does not read', () => {
    assert.deepEqual(
      unknownLatticeVariables('LATTICE_HOST: 0.0.0.0\nLATTICE_FOO: "1"\n# LATTICE_QDRANT_URLS'),
      ['LATTICE_FOO', 'LATTICE_QDRANT_URLS'],
    );
  });

  test('LATTICE_SETTINGS_FILE, the one variable outside the table, is read by the loader', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lattice-deploy-settings-'));
    try {
      const file = join(dir, 'settings.yaml');
      writeFileSync(file, 'logLevel: warn\n');
      assert.equal(loadSettings({ env: { LATTICE_SETTINGS_FILE: file } }).logLevel, 'warn');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('every Lattice process the files start has valid settings in its environment', () => {
    const processes = allLatticeProcesses();
    assert.ok(
      processes.some((p) => p.source === 'kubernetes') && processes.some((p) => p.source === 'compose'),
    );
    const invalid: string[] = [];
    for (const process of processes) {
      try {
        const settings = loadSettings({ env: process.env });
        // In a container every server must bind all interfaces, not the loopback default.
        if (settings.host !== '0.0.0.0' && settings.host !== '::') {
          invalid.push(`${process.where}: host ${settings.host}`);
        }
      } catch (err) {
        invalid.push(`${process.where}: ${(err as Error).message}`);
      }
    }
    assert.deepEqual(invalid, []);
  });

  test('Kubernetes processes dial Services declared in the manifests, on ports those Services have', () => {
    const documents = kubernetesDocuments();
    const services = documents.filter((doc) => doc.object.kind === 'Service').map((doc) => doc.object);
    const workloads = documents.filter((doc) => WORKLOAD_KINDS.has(doc.object.kind)).map((doc) => doc.object);
    const missing: string[] = [];
    for (const process of kubernetesProcesses(documents)) {
      for (const [setting, host, port] of dialledServers(loadSettings({ env: process.env }))) {
        const [name, namespace = 'lattice'] = host.split('.');
        const service = services.find((s) => s.metadata.name === name && s.metadata.namespace === namespace);
        const servicePort = service?.spec.ports.find((p: Yaml) => p.port === port);
        if (!servicePort) {
          missing.push(`${process.where}: ${setting} dials ${host}:${port}, no such Service port`);
          continue;
        }
        // …and the Service reaches a container listening there.
        const pods = workloads.filter((w) =>
          Object.entries(service.spec.selector).every(([k, v]) => podTemplate(w).metadata.labels?.[k] === v),
        );
        const target = servicePort.targetPort ?? servicePort.port;
        const reached = pods.some((w) =>
          podTemplate(w).spec.containers.some((c: Yaml) =>
            (c.ports ?? []).some((p: Yaml) => p.name === target || p.containerPort === target),
          ),
        );
        if (!reached)
          missing.push(`${process.where}: Service ${name} port ${port} reaches no container port`);
      }
    }
    assert.deepEqual(missing, []);
  });

  test('compose processes dial services of the compose file', () => {
    const services = Object.keys(composeFile().services);
    const missing: string[] = [];
    for (const process of composeProcesses()) {
      for (const [setting, host] of dialledServers(loadSettings({ env: process.env }))) {
        if (!services.includes(host))
          missing.push(`${process.where}: ${setting} dials ${host}, no such service`);
      }
    }
    assert.deepEqual(missing, []);
  });

  test('every command line is one the lattice CLI accepts', { timeout: 180_000 }, async () => {
    const byCommand = new Map<string, LatticeProcess[]>();
    for (const process of allLatticeProcesses()) {
      const key = JSON.stringify(process.argv);
      byCommand.set(key, [...(byCommand.get(key) ?? []), process]);
    }
    const refused: string[] = [];
    // A few at a time: each is a Node process loading the CLI.
    const queue = [...byCommand.entries()];
    await Promise.all(
      [0, 1, 2].map(async () => {
        for (let next = queue.shift(); next; next = queue.shift()) {
          const [key, processes] = next;
          const verdict = await cliAccepts(JSON.parse(key));
          if (!verdict.accepted) {
            refused.push(`lattice ${JSON.parse(key).join(' ')} (${processes[0]!.where}):\n${verdict.output}`);
          }
        }
      }),
    );
    assert.deepEqual(refused, []);
  });

  test('the CLI check refuses an unknown command, subcommand and option', { timeout: 60_000 }, async () => {
    const verdicts = await Promise.all(
      [['orchestrater'], ['vss', 'servng'], ['orchestrator', '--metrics-prot', '9464']].map(cliAccepts),
    );
    assert.deepEqual(
      verdicts.map((v) => v.accepted),
      [false, false, false],
      verdicts.map((v) => v.output).join('\n'),
    );
  });

  test('a process binding every interface has auth on its servers or allows it explicitly; the bare image refuses', () => {
    // The auth each server takes (src/cli/commands/): lattice up's feature store, model server and compute take none.
    const authOf = (name: string, up: boolean): ServerAuth | undefined => {
      if (name === 'ops' || name === 'platform') return undefined;
      if (name === 'vss-admin') return 'apiKeys';
      return up && ['featurestore', 'modelserver', 'compute'].includes(name) ? 'none' : 'callerTokens';
    };
    for (const process of allLatticeProcesses()) {
      const settings = loadSettings({ env: process.env });
      const up = commandWords(process.argv).join(' ') === 'up';
      const servers = listeningPorts(process.argv, settings).flatMap(({ name }) => {
        const auth = authOf(name, up);
        return auth === undefined ? [] : [{ name, auth }];
      });
      const check = () => checkExposure(settings, servers);
      if (process.source === 'dockerfile') {
        // Secure by default: `docker run` alone binds 0.0.0.0 with no auth, so it must be told.
        assert.throws(check, /LATTICE_ALLOW_UNAUTHENTICATED=true/, process.where);
      } else {
        assert.doesNotThrow(check, process.where);
      }
    }
  });
});
