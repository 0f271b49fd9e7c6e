import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type * as ort from 'onnxruntime-node';
import { describeError, LatticeError, notFound } from '../platform/errors.js';
import { defaultSessionOptions, LoadedModel } from './loaded-model.js';
import { readModelConfig } from './model-config.js';
import { modelConfigFileName, modelFileName } from './repository-layout.js';

export interface ModelRepositoryOptions {
  sessionOptions?: ort.InferenceSession.SessionOptions;
}

/** Versions of each model, ascending. */
type Snapshot = ReadonlyMap<string, readonly LoadedModel[]>;

const versionDir = /^\d+$/;

function subdirectories(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'))
    .map((entry) => entry.name);
}

/**
 * A Triton-layout model repository, `<root>/<model>/<version>/model.onnx` with an optional
 * `<root>/<model>/config.json`, loaded into onnxruntime sessions. Lookups read an immutable
 * snapshot; `reload()` builds a complete new one and swaps it in only when every model loaded, so a
 * broken file never takes down the models already serving.
 */
export class ModelRepository {
  private snapshot: Snapshot = new Map();
  private reloading: Promise<void> = Promise.resolve();

  private constructor(
    readonly root: string,
    private readonly options: ModelRepositoryOptions,
  ) {}

  /** Loads every model version under `root`; rejects naming each file that failed. */
  static async open(root: string, options: ModelRepositoryOptions = {}): Promise<ModelRepository> {
    const repository = new ModelRepository(root, options);
    await repository.reload();
    return repository;
  }

  /**
   * Scans the repository again and loads every version. On failure the previous models keep serving
   * and the error (FAILED_PRECONDITION) names every file that failed. Calls are serialized.
   */
  reload(): Promise<void> {
    const next = this.reloading.then(() => this.reloadNow());
    this.reloading = next.catch(() => {});
    return next;
  }

  private async reloadNow(): Promise<void> {
    const found = this.scan();
    const results = await Promise.allSettled(
      found.map(async ({ name, version, path, configPath }) =>
        LoadedModel.load(name, version, path, readModelConfig(configPath), {
          ...defaultSessionOptions,
          ...this.options.sessionOptions,
        }),
      ),
    );
    const loaded = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    // A broken config.json fails every version of its model with the same message: say it once.
    const failures = [
      ...new Set(results.flatMap((r) => (r.status === 'rejected' ? [describeError(r.reason)] : []))),
    ];
    if (failures.length > 0) {
      await Promise.all(loaded.map((model) => model.retire()));
      throw new LatticeError('FAILED_PRECONDITION', `model repository ${this.root}: ${failures.join('; ')}`, {
        field: this.root,
      });
    }
    const snapshot = new Map<string, LoadedModel[]>();
    for (const model of loaded) {
      const versions = snapshot.get(model.name) ?? [];
      versions.push(model);
      snapshot.set(model.name, versions);
    }
    for (const versions of snapshot.values()) versions.sort((a, b) => a.version - b.version);
    const previous = this.snapshot;
    this.snapshot = snapshot;
    for (const versions of previous.values()) for (const model of versions) await model.retire();
  }

  private scan(): Array<{ name: string; version: number; path: string; configPath: string }> {
    if (!existsSync(this.root) || !statSync(this.root).isDirectory()) {
      throw new LatticeError('FAILED_PRECONDITION', `model repository ${this.root} is not a directory`, {
        field: this.root,
      });
    }
    const problems: string[] = [];
    const found: Array<{ name: string; version: number; path: string; configPath: string }> = [];
    for (const name of subdirectories(this.root).sort()) {
      const modelDir = join(this.root, name);
      const versions = subdirectories(modelDir).filter((v) => versionDir.test(v));
      if (versions.length === 0) {
        problems.push(
          `${modelDir} has no version directories (expected ${join(modelDir, '1', modelFileName)})`,
        );
        continue;
      }
      for (const version of versions) {
        const path = join(modelDir, version, modelFileName);
        if (!existsSync(path)) problems.push(`${path} is missing`);
        else
          found.push({
            name,
            version: Number(version),
            path,
            configPath: join(modelDir, modelConfigFileName),
          });
      }
    }
    if (problems.length > 0) {
      throw new LatticeError('FAILED_PRECONDITION', `model repository ${this.root}: ${problems.join('; ')}`, {
        field: this.root,
      });
    }
    return found;
  }

  /** Names of the loaded models, sorted. */
  names(): string[] {
    return [...this.snapshot.keys()].sort();
  }

  /** Loaded versions of `name`, ascending; empty when the model is unknown. */
  versions(name: string): readonly LoadedModel[] {
    return this.snapshot.get(name) ?? [];
  }

  /** Every loaded model version. */
  all(): LoadedModel[] {
    return [...this.snapshot.values()].flat();
  }

  /** Undefined when the model or version is not loaded. */
  find(name: string, version = ''): LoadedModel | undefined {
    const versions = this.snapshot.get(name);
    if (!versions) return undefined;
    if (version === '') return versions[versions.length - 1];
    return versions.find((model) => String(model.version) === version);
  }

  /** The version asked for, or the highest when `version` is empty; NOT_FOUND naming what is missing. */
  get(name: string, version = ''): LoadedModel {
    const model = this.find(name, version);
    if (model) return model;
    const versions = this.snapshot.get(name);
    if (!versions) {
      const known = this.names();
      throw notFound(
        `unknown model "${name}"${known.length > 0 ? ` (serving: ${known.join(', ')})` : ' (no models loaded)'}`,
        'model_name',
      );
    }
    throw notFound(
      `model "${name}" has no version "${version}" (versions: ${versions.map((m) => m.version).join(', ')})`,
      'model_version',
    );
  }

  /** Releases every session. */
  async close(): Promise<void> {
    await this.reloading;
    const previous = this.snapshot;
    this.snapshot = new Map();
    for (const versions of previous.values()) for (const model of versions) await model.retire();
  }
}
