/**
 * Offline validation of Kubernetes objects against the API's OpenAPI schemas, as compiled by
 * `kubernetes-models` (Kubernetes 1.27 schemas; no cluster, no network).
 *
 * The schemas alone accept any unknown field (a `readinessProbes:` typo would pass), while kubectl's
 * default strict field validation refuses it. So each object is also validated once more through a
 * Proxy that records which fields the compiled validator reads: the validator reads every field the
 * schema declares (and iterates maps), so a field it never read is one the schema does not know.
 */

/** A kubernetes-models class, looked up by apiVersion and kind at run time. */
type ModelClass = { new (data: unknown): { validate(): void }; prototype: { validate(this: unknown): void } };

const modules = new Map<string, Promise<Record<string, unknown>>>();

/** The kubernetes-models class for an apiVersion and kind, or undefined when it has none. */
export async function modelClass(apiVersion: string, kind: string): Promise<ModelClass | undefined> {
  if (!/^[a-z0-9.-]+(\/[a-z0-9]+)?$/.test(apiVersion) || !/^[A-Z][A-Za-z0-9]*$/.test(kind)) return undefined;
  let loading = modules.get(apiVersion);
  if (!loading) {
    loading = import(`kubernetes-models/${apiVersion}`).catch(() => ({}));
    modules.set(apiVersion, loading);
  }
  const model = (await loading)[kind];
  return typeof model === 'function' ? (model as ModelClass) : undefined;
}

interface Visited {
  path: string;
  read: Set<string>;
}

/** Wraps `value` so that every property read is recorded, for each nested object by its path. */
function recordReads(value: unknown, path: string, visited: Map<object, Visited>): unknown {
  if (value === null || typeof value !== 'object') return value;
  const read = new Set<string>();
  visited.set(value, { path, read });
  const wrapped = new Map<string, unknown>();
  return new Proxy(value, {
    get(target, key, receiver) {
      const child = Reflect.get(target, key, receiver);
      if (typeof key !== 'string') return child;
      read.add(key);
      if (child === null || typeof child !== 'object') return child;
      if (!wrapped.has(key)) wrapped.set(key, recordReads(child, `${path}/${key}`, visited));
      return wrapped.get(key);
    },
  });
}

/**
 * Problems with one object: it has no schema, fails its schema (every message of the validator), or
 * holds fields the schema does not declare (each by its path). Empty when it is valid.
 */
export async function schemaProblems(object: { apiVersion?: unknown; kind?: unknown }): Promise<string[]> {
  if (typeof object.apiVersion !== 'string' || typeof object.kind !== 'string') {
    return ['apiVersion and kind must be strings'];
  }
  const Model = await modelClass(object.apiVersion, object.kind);
  if (!Model) return [`no Kubernetes schema for ${object.apiVersion} ${object.kind}`];
  try {
    new Model(object).validate();
  } catch (err) {
    return [(err as Error).message];
  }
  const visited = new Map<object, Visited>();
  Model.prototype.validate.call(recordReads(object, '', visited));
  const unknown: string[] = [];
  for (const [value, { path, read }] of visited) {
    if (Array.isArray(value)) continue;
    for (const key of Object.keys(value)) {
      if (!read.has(key)) unknown.push(`unknown field ${path}/${key}`);
    }
  }
  return unknown;
}
