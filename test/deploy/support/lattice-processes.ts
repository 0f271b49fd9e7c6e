/**
 * Every Lattice process the deployment files start, wherever they start it: a container of a
 * Kubernetes workload running the Lattice image, a compose service built from it, and the image's own
 * default command. Each comes with its command line (the words after `lattice`) and the environment it
 * sees: the image's ENV, then (Kubernetes) its envFrom ConfigMaps and Secrets and env entries, or
 * (compose) its environment.
 */
import { settingsEnv } from '../../../src/platform/settings/index.js';
import {
  composeFile,
  describeDocument,
  dockerfileStages,
  execForm,
  imageEnv,
  type KubernetesDocument,
  kubernetesDocuments,
  type Yaml,
} from './deploy-files.js';

export interface LatticeProcess {
  /** Where it is declared, for messages. */
  where: string;
  source: 'kubernetes' | 'compose' | 'dockerfile';
  /** The arguments after `lattice` (the image's ENTRYPOINT runs bin/lattice.js). */
  argv: string[];
  env: Record<string, string>;
}

/** The image name the manifests and the compose file give the Lattice image. */
export const LATTICE_IMAGE = /^lattice(:[\w.-]+)?$/;

/** Variables Lattice reads: each setting's variable (from the settings loader itself) and the settings file's. */
export function knownLatticeVariables(): Set<string> {
  return new Set([...settingsEnv.map((entry) => entry.env), 'LATTICE_SETTINGS_FILE']);
}

/** Every LATTICE_* name in `text` that Lattice does not read, in order of appearance. */
export function unknownLatticeVariables(text: string, known = knownLatticeVariables()): string[] {
  const names = text.match(/\bLATTICE_[A-Z0-9_]+\b/g) ?? [];
  return [...new Set(names.filter((name) => !known.has(name)))];
}

export const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob']);

/** The pod template of a workload (CronJob: its job's). */
export function podTemplate(object: Yaml): Yaml {
  return object.kind === 'CronJob' ? object.spec.jobTemplate.spec.template : object.spec.template;
}

/** A ConfigMap's or Secret's keys and values (Secret `data` decoded from base64). */
function sourceValues(object: Yaml): Record<string, string> {
  const decoded = Object.fromEntries(
    Object.entries((object.data ?? {}) as Record<string, string>).map(([key, value]) => [
      key,
      object.kind === 'Secret' ? Buffer.from(value, 'base64').toString('utf8') : value,
    ]),
  );
  return { ...decoded, ...(object.stringData ?? {}) };
}

function findSource(documents: KubernetesDocument[], kind: string, name: string, namespace: string): Yaml {
  return documents.find(
    (doc) =>
      doc.object.kind === kind &&
      doc.object.metadata?.name === name &&
      doc.object.metadata?.namespace === namespace,
  )?.object;
}

/** The environment of one container: image ENV, envFrom in order, then env (later wins, as in Kubernetes). */
export function containerEnv(
  container: Yaml,
  namespace: string,
  documents: KubernetesDocument[],
  where: string,
): Record<string, string> {
  const env: Record<string, string> = { ...imageEnv() };
  for (const from of container.envFrom ?? []) {
    const [kind, ref] = from.configMapRef ? ['ConfigMap', from.configMapRef] : ['Secret', from.secretRef];
    const source = findSource(documents, kind, ref.name, namespace);
    if (source === undefined) {
      if (ref.optional) continue;
      throw new Error(`${where}: envFrom ${kind} ${namespace}/${ref.name} is not in the manifests`);
    }
    Object.assign(env, sourceValues(source));
  }
  for (const entry of container.env ?? []) {
    if (entry.value !== undefined) env[entry.name] = String(entry.value);
    else if (entry.valueFrom?.configMapKeyRef || entry.valueFrom?.secretKeyRef) {
      const ref = entry.valueFrom.configMapKeyRef ?? entry.valueFrom.secretKeyRef;
      const kind = entry.valueFrom.configMapKeyRef ? 'ConfigMap' : 'Secret';
      const source = findSource(documents, kind, ref.name, namespace);
      const value = source === undefined ? undefined : sourceValues(source)[ref.key];
      if (value === undefined) throw new Error(`${where}: env ${entry.name} refers to a missing ${kind} key`);
      env[entry.name] = value;
    }
  }
  return env;
}

export function kubernetesProcesses(documents = kubernetesDocuments()): LatticeProcess[] {
  return documents
    .filter((doc) => WORKLOAD_KINDS.has(doc.object.kind))
    .flatMap((doc) => {
      const spec = podTemplate(doc.object).spec;
      const containers: Yaml[] = [...(spec.initContainers ?? []), ...spec.containers];
      return containers
        .filter((container) => LATTICE_IMAGE.test(container.image))
        .map((container) => {
          const where = `${describeDocument(doc)} container ${container.name}`;
          if (container.command !== undefined) {
            throw new Error(`${where}: set args, not command (the image's ENTRYPOINT runs lattice)`);
          }
          return {
            where,
            source: 'kubernetes' as const,
            argv: (container.args ?? []).map(String),
            env: containerEnv(container, doc.object.metadata.namespace, documents, where),
          };
        });
    });
}

/** A compose `environment`, as a map or as a list of KEY=value. */
export function composeEnvironment(environment: Yaml): Record<string, string> {
  if (environment === undefined || environment === null) return {};
  if (Array.isArray(environment)) {
    return Object.fromEntries(
      environment.map((entry: string) => {
        const at = entry.indexOf('=');
        return at < 0 ? [entry, ''] : [entry.slice(0, at), entry.slice(at + 1)];
      }),
    );
  }
  return Object.fromEntries(Object.entries(environment).map(([key, value]) => [key, String(value ?? '')]));
}

export function composeProcesses(compose = composeFile()): LatticeProcess[] {
  return Object.entries(compose.services as Record<string, Yaml>)
    .filter(([, service]) => LATTICE_IMAGE.test(service.image ?? ''))
    .map(([name, service]) => {
      const where = `deploy/compose.yaml service ${name}`;
      if (service.entrypoint !== undefined) throw new Error(`${where}: keep the image's entrypoint`);
      if (!Array.isArray(service.command)) throw new Error(`${where}: command must be a list of words`);
      return {
        where,
        source: 'compose' as const,
        argv: service.command.map(String),
        env: { ...imageEnv(), ...composeEnvironment(service.environment) },
      };
    });
}

export function dockerfileProcess(stages = dockerfileStages()): LatticeProcess {
  const cmd = stages
    .at(-1)!
    .instructions.filter((i) => i.keyword === 'CMD')
    .at(-1);
  if (!cmd) throw new Error('Dockerfile: the final stage has no CMD');
  return { where: 'Dockerfile CMD', source: 'dockerfile', argv: execForm(cmd), env: imageEnv(stages) };
}

export function allLatticeProcesses(): LatticeProcess[] {
  return [...kubernetesProcesses(), ...composeProcesses(), dockerfileProcess()];
}
