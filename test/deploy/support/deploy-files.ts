/**
 * The deployment files as the tests read them: the Kubernetes manifests (every document of every
 * .yaml under deploy/kubernetes/, kustomizations apart), the compose file, the Dockerfile parsed into
 * stages and instructions, and the raw text of all of them.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { parseStrictYaml } from './strict-yaml.js';

export const root = fileURLToPath(new URL('../../../', import.meta.url));
export const kubernetesDir = join(root, 'deploy/kubernetes');
export const composePath = join(root, 'deploy/compose.yaml');
export const dockerfilePath = join(root, 'Dockerfile');
export const dockerignorePath = join(root, '.dockerignore');

/** A path relative to the repository root, for messages. */
export function repoPath(path: string): string {
  return relative(root, path);
}

// biome-ignore lint/suspicious/noExplicitAny: YAML documents are checked field by field by the tests.
export type Yaml = any;

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

/** Every file under deploy/ plus the Dockerfile and .dockerignore. */
export function deployFiles(): string[] {
  return [...walk(join(root, 'deploy')), dockerfilePath, dockerignorePath].sort();
}

export interface KubernetesDocument {
  /** Repository-relative file. */
  file: string;
  /** Position of the document in its file. */
  index: number;
  object: Yaml;
}

/** Names an object for messages: `deploy/kubernetes/base/orchestrator.yaml#0 Deployment/orchestrator`. */
export function describeDocument(doc: KubernetesDocument): string {
  return `${doc.file}#${doc.index} ${doc.object?.kind}/${doc.object?.metadata?.name}`;
}

function isKustomization(path: string): boolean {
  return /(^|\/)kustomization\.ya?ml$/.test(path);
}

export function kustomizationFiles(): string[] {
  return walk(kubernetesDir).filter(isKustomization).sort();
}

export function kubernetesManifestFiles(): string[] {
  return walk(kubernetesDir)
    .filter((path) => /\.ya?ml$/.test(path) && !isKustomization(path))
    .sort();
}

/** Parses every document of a YAML file strictly (see strict-yaml.ts); a problem fails with the file named. */
export function parseYamlDocuments(path: string): Yaml[] {
  return parseStrictYaml(readFileSync(path, 'utf8'), repoPath(path));
}

export function kubernetesDocuments(): KubernetesDocument[] {
  return kubernetesManifestFiles().flatMap((path) =>
    parseYamlDocuments(path)
      .map((object, index) => ({ file: repoPath(path), index, object }))
      .filter((doc) => doc.object !== null),
  );
}

/** The compose file; `<<` merge keys are YAML 1.1 and what compose files use for shared blocks. */
export function composeFile(): Yaml {
  return parse(readFileSync(composePath, 'utf8'), { merge: true, prettyErrors: true });
}

export interface DockerInstruction {
  /** Upper-case keyword: FROM, RUN, COPY, ENV, … */
  keyword: string;
  /** The rest of the instruction, continuation lines joined. */
  rest: string;
  line: number;
}

export interface DockerStage {
  name: string | undefined;
  image: string;
  instructions: DockerInstruction[];
}

/** The Dockerfile's stages, each with its instructions (comments dropped, `\` continuations joined). */
export function dockerfileStages(text = readFileSync(dockerfilePath, 'utf8')): DockerStage[] {
  const instructions: DockerInstruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i]!;
    if (/^\s*(#|$)/.test(line)) continue;
    while (line.endsWith('\\') && i + 1 < lines.length) {
      i++;
      const next = lines[i]!;
      if (/^\s*#/.test(next)) continue;
      line = `${line.slice(0, -1)} ${next.trim()}`;
    }
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!match) throw new Error(`Dockerfile line ${start + 1}: cannot parse ${JSON.stringify(line)}`);
    instructions.push({ keyword: match[1]!.toUpperCase(), rest: match[2]!.trim(), line: start + 1 });
  }
  const stages: DockerStage[] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') {
      const [image, as, name] = instruction.rest.split(/\s+/);
      stages.push({
        image: image!,
        name: as?.toUpperCase() === 'AS' ? name : undefined,
        instructions: [],
      });
    } else if (instruction.keyword !== 'ARG' || stages.length > 0) {
      const stage = stages.at(-1);
      if (!stage) throw new Error(`Dockerfile line ${instruction.line}: ${instruction.keyword} before FROM`);
      stage.instructions.push(instruction);
    }
  }
  return stages;
}

/** `KEY=value KEY2="v 2"` (ENV's form; the legacy `ENV KEY value` is refused). */
export function parseDockerEnv(rest: string): Record<string, string> {
  const env: Record<string, string> = {};
  const pattern = /([A-Za-z_][A-Za-z0-9_]*)=("([^"]*)"|\S*)\s*/gy;
  let match: RegExpExecArray | null;
  let consumed = 0;
  // biome-ignore lint/suspicious/noAssignInExpressions: the usual exec loop.
  while ((match = pattern.exec(rest)) !== null) {
    env[match[1]!] = match[3] ?? match[2]!;
    consumed = pattern.lastIndex;
  }
  if (consumed !== rest.length) throw new Error(`ENV ${rest}: expected KEY=value pairs`);
  return env;
}

/** An instruction's JSON (exec) form, e.g. CMD ["up"] (HEALTHCHECK's after its options); the shell form is refused. */
export function execForm(instruction: DockerInstruction): string[] {
  const json = instruction.rest.replace(/^(--\S+\s+)*CMD\s+/, '');
  const parsed: unknown = JSON.parse(json);
  if (!Array.isArray(parsed) || !parsed.every((word) => typeof word === 'string')) {
    throw new Error(`Dockerfile line ${instruction.line}: ${instruction.keyword} is not in exec form`);
  }
  return parsed;
}

/** The environment the image gives every container: ENV of the final stage. */
export function imageEnv(stages = dockerfileStages()): Record<string, string> {
  const final = stages.at(-1)!;
  return Object.assign(
    {},
    ...final.instructions.filter((i) => i.keyword === 'ENV').map((i) => parseDockerEnv(i.rest)),
  );
}
