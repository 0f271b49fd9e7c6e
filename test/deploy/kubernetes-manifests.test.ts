/**
 * deploy/kubernetes/ validated offline: every object against the Kubernetes API schemas (with unknown
 * fields refused, as kubectl does), the kustomizations against the files beside them, and the
 * workloads against the Lattice processes they run: one Deployment per component, on the distributed
 * adapters, as a non-root user with resources, declaring exactly the ports the process listens on and
 * probing its own ops server (/readyz, /healthz) or, for the servers without one, its gRPC health.
 * Nothing here needs a cluster: no container engine runs on these machines.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { loadSettings } from '../../src/platform/settings/index.js';
import {
  describeDocument,
  type KubernetesDocument,
  kubernetesDocuments,
  kustomizationFiles,
  parseYamlDocuments,
  repoPath,
  type Yaml,
} from './support/deploy-files.js';
import { schemaProblems } from './support/kubernetes-schema.js';
import {
  kubernetesProcesses,
  LATTICE_IMAGE,
  podTemplate,
  WORKLOAD_KINDS,
} from './support/lattice-processes.js';
import { commandWords, listeningPorts } from './support/listening-ports.js';

const documents = kubernetesDocuments();
const workloads = documents.filter((doc) => WORKLOAD_KINDS.has(doc.object.kind));

/** The components a cluster runs, each alone: `lattice vss` and `lattice up` are the embedded modes. */
const COMPONENTS = [
  'orchestrator',
  'featurestore serve',
  'modelserver',
  'compute',
  'vss serving',
  'vss consumers',
  'vss admin',
];

function containersOf(doc: KubernetesDocument): Yaml[] {
  return podTemplate(doc.object).spec.containers;
}

/** A probe's or Service's port (a number or a container port's name) as a number, if declared. */
function resolvePort(containers: Yaml[], port: number | string): number | undefined {
  if (typeof port === 'number') {
    return containers.some((c) => (c.ports ?? []).some((p: Yaml) => p.containerPort === port))
      ? port
      : undefined;
  }
  for (const container of containers) {
    const found = (container.ports ?? []).find((p: Yaml) => p.name === port);
    if (found) return found.containerPort;
  }
  return undefined;
}

/** The container a process of kubernetesProcesses() runs in, marked `isInit` when it is an init container. */
function containerOf(where: string): Yaml {
  const doc = workloads.find((w) => where.startsWith(`${describeDocument(w)} `))!;
  const name = /container (\S+)$/.exec(where)![1];
  const pod = podTemplate(doc.object).spec;
  const init = (pod.initContainers ?? []).find((c: Yaml) => c.name === name);
  return init ? { ...init, isInit: true } : pod.containers.find((c: Yaml) => c.name === name);
}

function labelsMatch(selector: Record<string, string>, labels: Record<string, string> | undefined): boolean {
  return Object.entries(selector).every(([key, value]) => labels?.[key] === value);
}

describe('Kubernetes manifests (offline)', () => {
  test('there are manifests, and every object validates against its Kubernetes schema with no unknown field', async () => {
    assert.ok(documents.length > 0, 'no manifests under deploy/kubernetes');
    const problems: string[] = [];
    for (const doc of documents) {
      for (const problem of await schemaProblems(doc.object))
        problems.push(`${describeDocument(doc)}: ${problem}`);
    }
    assert.deepEqual(problems, []);
  });

  test('the validation refuses a wrong type, a missing field and an unknown field', async () => {
    const deployment = structuredClone(workloads[0]!.object);
    const container = podTemplate(deployment).spec.containers[0];
    container.ports[0].containerPort = String(container.ports[0].containerPort);
    assert.match((await schemaProblems(deployment)).join('\n'), /containerPort must be integer/);

    const missing = structuredClone(workloads[0]!.object);
    delete podTemplate(missing).spec.containers[0].name;
    assert.match((await schemaProblems(missing)).join('\n'), /must have required property name/);

    const typo = structuredClone(workloads[0]!.object);
    const probed = podTemplate(typo).spec.containers[0];
    probed.readinessProbes = probed.readinessProbe;
    assert.deepEqual(await schemaProblems(typo), [
      'unknown field /spec/template/spec/containers/0/readinessProbes',
    ]);
    assert.deepEqual(await schemaProblems({ apiVersion: 'v1', kind: 'NoSuchKind' }), [
      'no Kubernetes schema for v1 NoSuchKind',
    ]);
  });

  test('each kustomization lists every manifest beside it, and only files and kustomizations that exist', () => {
    const files = kustomizationFiles();
    assert.ok(files.length > 0, 'no kustomization.yaml under deploy/kubernetes');
    const images = new Set(
      workloads.flatMap((doc) =>
        [...containersOf(doc), ...(podTemplate(doc.object).spec.initContainers ?? [])].map(
          (c: Yaml) => String(c.image).split(':')[0],
        ),
      ),
    );
    for (const file of files) {
      const [kustomization] = parseYamlDocuments(file);
      const where = repoPath(file);
      assert.equal(kustomization.apiVersion, 'kustomize.config.k8s.io/v1beta1', where);
      assert.equal(kustomization.kind, 'Kustomization', where);
      assert.deepEqual(
        Object.keys(kustomization).filter(
          (key) => !['apiVersion', 'kind', 'resources', 'images'].includes(key),
        ),
        [],
        `${where}: only resources and images are used here; check any other field against kustomize's docs`,
      );
      const dir = dirname(file);
      const listed = new Set<string>();
      for (const resource of kustomization.resources as string[]) {
        const path = join(dir, resource);
        assert.ok(existsSync(path), `${where}: resource ${resource} does not exist`);
        if (resource.endsWith('.yaml')) listed.add(resource);
        else
          assert.ok(
            existsSync(join(path, 'kustomization.yaml')),
            `${where}: ${resource} is no kustomization`,
          );
      }
      const beside = readdirSync(dir).filter(
        (name) => name.endsWith('.yaml') && name !== 'kustomization.yaml',
      );
      assert.deepEqual(
        [...listed].sort(),
        beside.sort(),
        `${where} must list exactly the manifests beside it`,
      );
      for (const image of kustomization.images ?? []) {
        assert.ok(images.has(image.name), `${where}: images names ${image.name}, which no container uses`);
      }
    }
  });

  test('every object lives in the lattice namespace, which is declared, and names are unique', () => {
    assert.ok(
      documents.some((doc) => doc.object.kind === 'Namespace' && doc.object.metadata.name === 'lattice'),
      'no Namespace lattice',
    );
    const seen = new Set<string>();
    for (const doc of documents) {
      if (doc.object.kind === 'Namespace') continue;
      assert.equal(doc.object.metadata.namespace, 'lattice', describeDocument(doc));
      const key = `${doc.object.kind}/${doc.object.metadata.name}`;
      assert.ok(!seen.has(key), `${describeDocument(doc)}: a second ${key}`);
      seen.add(key);
    }
  });

  test('workloads select their own pods; Services select a workload and target ports it declares', () => {
    for (const doc of workloads) {
      const { selector } = doc.object.spec;
      assert.ok(
        labelsMatch(selector.matchLabels, podTemplate(doc.object).metadata.labels),
        `${describeDocument(doc)}: the selector does not match the pod labels`,
      );
      for (const other of workloads) {
        if (other === doc) continue;
        assert.ok(
          !labelsMatch(selector.matchLabels, podTemplate(other.object).metadata.labels),
          `${describeDocument(doc)}'s selector also selects ${describeDocument(other)}'s pods`,
        );
      }
    }
    for (const doc of documents.filter((d) => d.object.kind === 'Service')) {
      const selected = workloads.filter((w) =>
        labelsMatch(doc.object.spec.selector, podTemplate(w.object).metadata.labels),
      );
      assert.equal(selected.length, 1, `${describeDocument(doc)} must select exactly one workload`);
      for (const port of doc.object.spec.ports) {
        assert.ok(
          resolvePort(containersOf(selected[0]!), port.targetPort ?? port.port) !== undefined,
          `${describeDocument(doc)}: port ${port.name} targets ${port.targetPort}, which ${describeDocument(selected[0]!)} does not declare`,
        );
      }
    }
  });

  test('every probe targets a port its container declares', () => {
    for (const doc of workloads) {
      for (const container of containersOf(doc)) {
        for (const kind of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
          const probe = container[kind];
          if (!probe) continue;
          const port = probe.httpGet?.port ?? probe.grpc?.port ?? probe.tcpSocket?.port;
          if (port === undefined) continue; // exec
          assert.ok(
            resolvePort([container], port) !== undefined,
            `${describeDocument(doc)} container ${container.name}: ${kind} port ${port} is not declared`,
          );
        }
      }
    }
  });

  test('each Lattice component runs alone in a Deployment of its own, on the distributed adapters', () => {
    const main = kubernetesProcesses(documents).filter((p) => !/initContainer|demo-models/.test(p.where));
    const commands = main.map((p) => commandWords(p.argv).join(' '));
    assert.deepEqual([...commands].sort(), [...COMPONENTS].sort());
    for (const process of main) {
      const settings = loadSettings({ env: process.env });
      assert.deepEqual(
        {
          configStore: settings.configStore.kind,
          queue: settings.queue.kind,
          sql: settings.sql.kind,
          cache: settings.cache.kind,
          vectorDb: settings.vss.vectorDb.kind,
          productionVectorDb: settings.vss.clusters.production.vectorDb.kind,
        },
        {
          configStore: 'etcd',
          queue: 'jetstream',
          sql: 'postgres',
          cache: 'redis',
          vectorDb: 'qdrant',
          productionVectorDb: 'qdrant',
        },
        process.where,
      );
    }
  });

  test('Lattice pods run as a non-root user, read-only, with requests and a memory limit', () => {
    for (const doc of workloads) {
      const pod = podTemplate(doc.object).spec;
      const containers: Yaml[] = [...(pod.initContainers ?? []), ...pod.containers];
      if (!containers.some((c) => LATTICE_IMAGE.test(c.image))) continue;
      const where = describeDocument(doc);
      assert.equal(pod.securityContext?.runAsNonRoot, true, `${where}: runAsNonRoot`);
      assert.ok((pod.securityContext?.runAsUser ?? 1) > 0, `${where}: runAsUser must not be 0`);
      assert.equal(pod.automountServiceAccountToken, false, `${where}: Lattice needs no API token`);
      for (const container of containers) {
        const at = `${where} container ${container.name}`;
        assert.equal(container.securityContext?.allowPrivilegeEscalation, false, at);
        assert.equal(container.securityContext?.readOnlyRootFilesystem, true, at);
        assert.deepEqual(container.securityContext?.capabilities?.drop, ['ALL'], at);
        assert.ok(
          container.resources?.requests?.cpu && container.resources?.requests?.memory,
          `${at}: requests`,
        );
        assert.ok(container.resources?.limits?.memory, `${at}: memory limit`);
      }
    }
  });

  test('Lattice containers can write their data directory and /tmp under a read-only root', () => {
    for (const process of kubernetesProcesses(documents)) {
      const container = containerOf(process.where);
      const mounts = (container.volumeMounts ?? []).map((m: Yaml) => m.mountPath);
      const { dataDir } = loadSettings({ env: process.env });
      assert.ok(mounts.includes('/tmp'), `${process.where}: no volume at /tmp`);
      assert.ok(mounts.includes(dataDir), `${process.where}: no volume at the data directory ${dataDir}`);
    }
  });

  test('Lattice containers declare exactly the ports they listen on and probe their own servers', () => {
    for (const process of kubernetesProcesses(documents)) {
      const container = containerOf(process.where);
      const isInit = container.isInit === true;
      const listening = listeningPorts(process.argv, loadSettings({ env: process.env }));
      const declared = (container.ports ?? []).map((p: Yaml) => p.containerPort).sort();
      assert.deepEqual(declared, listening.map((p) => p.port).sort(), `${process.where}: containerPorts`);
      if (isInit) {
        assert.deepEqual(listening, [], `${process.where}: an init container must finish`);
        continue;
      }
      for (const kind of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
        assert.ok(container[kind], `${process.where}: no ${kind}`);
      }
      const ops = listening.find((p) => p.name === 'ops');
      const { readinessProbe, livenessProbe, startupProbe } = container;
      if (ops) {
        // /readyz: the adapters and the process's own servers answer; /healthz: the process is up.
        assert.equal(readinessProbe.httpGet?.path, '/readyz', `${process.where}: readiness`);
        assert.equal(resolvePort([container], readinessProbe.httpGet.port), ops.port, process.where);
        for (const probe of [livenessProbe, startupProbe]) {
          assert.equal(probe.httpGet?.path, '/healthz', `${process.where}: liveness and startup`);
          assert.equal(resolvePort([container], probe.httpGet.port), ops.port, process.where);
        }
      } else {
        // No ops server: the gRPC health service of its own port (SERVING once it listens).
        const grpcPorts = listening.filter((p) => p.protocol === 'grpc').map((p) => p.port);
        for (const probe of [readinessProbe, livenessProbe, startupProbe]) {
          assert.ok(
            grpcPorts.includes(probe.grpc?.port),
            `${process.where}: gRPC health probe on ${grpcPorts}`,
          );
        }
      }
    }
  });

  test('a consumers Deployment on every partition runs one pod at a time', () => {
    // Two processes consuming one partition at once would lose its per-key order (docs/operations.md, "Running vss").
    for (const doc of workloads) {
      for (const container of containersOf(doc)) {
        const argv: string[] = container.args ?? [];
        if (commandWords(argv).join(' ') !== 'vss consumers' || argv.includes('--partitions')) continue;
        assert.equal(doc.object.spec.replicas, 1, describeDocument(doc));
        assert.equal(doc.object.spec.strategy?.type, 'Recreate', describeDocument(doc));
      }
    }
  });

  test('vss admin on the file job runner keeps its data directory on a claim, one pod at a time', () => {
    // The file runner's job records and checkpoints live under <dataDir>/jobs, so a job resumes after a restart.
    for (const process of kubernetesProcesses(documents)) {
      if (commandWords(process.argv).join(' ') !== 'vss admin') continue;
      const settings = loadSettings({ env: process.env });
      if (settings.vss.admin.jobRunner.kind !== 'file') continue;
      const doc = workloads.find((w) => process.where.startsWith(`${describeDocument(w)} `))!;
      const container = containerOf(process.where);
      const mount = container.volumeMounts.find((m: Yaml) => m.mountPath === settings.dataDir);
      const volume = podTemplate(doc.object).spec.volumes.find((v: Yaml) => v.name === mount.name);
      const claim = documents.find(
        (d) =>
          d.object.kind === 'PersistentVolumeClaim' &&
          d.object.metadata.name === volume.persistentVolumeClaim?.claimName,
      );
      assert.ok(
        claim,
        `${process.where}: the data directory must be a PersistentVolumeClaim of the manifests`,
      );
      assert.equal(doc.object.spec.replicas, 1, process.where);
      assert.equal(doc.object.spec.strategy?.type, 'Recreate', process.where);
    }
  });
});
