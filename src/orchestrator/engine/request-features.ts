import { dataTypeInfo } from '../../datatypes/data-type.js';
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

/**
 * A model input takes a fixed number of values per row (its shape, unless it has a -1): a request
 * feature it reads must give its share of them, which its data type and vector_dim decide. A vector
 * feature of another dimension (or of none, `vector_dim` 0) is the client's mistake, INVALID_ARGUMENT
 * naming the feature, found here before any batch is sent rather than as the component's failure.
 */
export function checkModelInputWidths(
  snapshot: ModelSnapshot<ExecutionContext>,
  matrix: ComponentMatrix,
): void {
  const requested = new Set(snapshot.model.requestFeatures);
  for (const plan of snapshot.model.components.values()) {
    if (plan.kind !== 'model') continue;
    for (const input of plan.config.inputs) {
      if (input.shape.includes(-1) || !input.features.some((f) => requested.has(f))) continue;
      let perRow = 0;
      for (const name of input.features) {
        if (!matrix.hasByteColumn(name)) {
          perRow += 1;
          continue;
        }
        const spec = matrix.byteColumn(name).spec;
        perRow += dataTypeInfo(spec.dataType).isVector ? spec.vectorDim : 1;
      }
      const expected = input.shape.reduce((a, d) => (d > 0 ? a * d : a), 1);
      if (perRow === expected) continue;
      const culprit =
        input.features.find((f) => requested.has(f) && matrix.hasByteColumn(f)) ?? input.features[0]!;
      const spec = matrix.hasByteColumn(culprit) ? matrix.byteColumn(culprit).spec : undefined;
      throw invalidArgument(
        `request feature ${quote(culprit)}${spec ? ` (vector_dim ${spec.vectorDim})` : ''}: model input ${quote(input.name)} of component ${quote(plan.name)} has shape [${input.shape.join(', ')}], but its features (${input.features.map((f) => quote(f)).join(', ')}) give ${perRow} values per row`,
        culprit,
      );
    }
  }
}
