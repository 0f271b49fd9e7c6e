import { invalidArgument } from '../../platform/errors.js';
import type { ModelSnapshot, ValidatedModel } from '../config/index.js';
import { quote } from '../config/index.js';
import type { ComponentMatrix, SlateData } from '../matrix/component-matrix.js';
import type { ExecutionContext } from './execution-context.js';

/**
 * Where the model reads a request feature: `target` when a component reads it from the target rows
 * (feature keys, model inputs — slate models too, they read their slate's target rows — and
 * compute over targets), `slate` when a slate compute reads it from the pair/slate rows, and the
 * component that reads it there; features only answered or logged need neither.
 */
interface FeatureReaders {
  target: string | undefined;
  slate: string | undefined;
}

const readersByModel = new WeakMap<ValidatedModel, Map<string, FeatureReaders>>();

function featureReaders(model: ValidatedModel): Map<string, FeatureReaders> {
  const cached = readersByModel.get(model);
  if (cached) return cached;
  const readers = new Map<string, FeatureReaders>();
  for (const name of model.requestFeatures) readers.set(name, { target: undefined, slate: undefined });
  const read = (column: string, component: string, level: 'target' | 'slate') => {
    const entry = readers.get(column);
    if (entry && entry[level] === undefined) entry[level] = component;
  };
  for (const plan of model.components.values()) {
    if (plan.kind === 'feature') for (const key of plan.config.fs_keys) read(key.col, plan.name, 'target');
    else if (plan.kind === 'model')
      for (const input of plan.config.inputs)
        for (const column of input.features) read(column, plan.name, 'target');
    else
      for (const column of Object.values(plan.config.score_mapping))
        read(column, plan.name, plan.config.slate ? 'slate' : 'target');
  }
  readersByModel.set(model, readers);
  return readers;
}

const inMatrix = (matrix: ComponentMatrix, name: string) =>
  matrix.hasByteColumn(name) || matrix.hasStringColumn(name);

/**
 * Columns the model reads but no component produces must come with the request, on the rows that
 * read them: a feature a component reads per target as a context or target feature (a pair or slate
 * feature does not reach the target rows), one a slate compute reads as a pair or slate feature.
 * INVALID_ARGUMENT naming the feature otherwise.
 */
export function requireRequestFeatures(
  snapshot: ModelSnapshot<ExecutionContext>,
  matrix: ComponentMatrix,
  slate: SlateData | undefined,
): void {
  const readers = featureReaders(snapshot.model);
  for (const name of snapshot.model.requestFeatures) {
    const { target, slate: slateReader } = readers.get(name)!;
    if (!slate) {
      if (!inMatrix(matrix, name))
        throw invalidArgument(
          `model ${quote(snapshot.id)} needs the request feature ${quote(name)} (as a context, target, pair or slate input feature)`,
          name,
        );
      continue;
    }
    if (target !== undefined && !inMatrix(matrix, name))
      throw invalidArgument(
        `model ${quote(snapshot.id)} needs the request feature ${quote(name)} per target, as a context or target input feature: component ${quote(target)} reads it from the target rows${slate.hasByteColumn(name) ? ' (a pair or slate input feature does not reach them)' : ''}`,
        name,
      );
    if (slateReader !== undefined && !slate.hasByteColumn(name))
      throw invalidArgument(
        `model ${quote(snapshot.id)} needs the request feature ${quote(name)} as a pair or slate input feature: component ${quote(slateReader)} reads it from the pair/slate rows`,
        name,
      );
    if (
      target === undefined &&
      slateReader === undefined &&
      !inMatrix(matrix, name) &&
      !slate.hasByteColumn(name)
    )
      throw invalidArgument(
        `model ${quote(snapshot.id)} needs the request feature ${quote(name)} (as a context, target, pair or slate input feature)`,
        name,
      );
  }
}
