import type { z } from 'zod';
import { compileExpression } from '../../compute/index.js';
import { DataType, dataTypeInfo, lookupDataType } from '../../datatypes/data-type.js';
import { isLatticeError, LatticeError } from '../../platform/errors.js';
import type { Topology, TopologyCache } from '../dag/index.js';
import type { ColumnSpec } from '../matrix/component-matrix.js';
import {
  type ComputeComponentConfig,
  type FeatureComponentConfig,
  type ModelConfig,
  type ModelServingComponentConfig,
  modelConfigSchema,
} from './schema.js';
import { shadowProblems } from './shadow-schema.js';
import { checkResponseOrder, checkRetrieval } from './validate-retrieval.js';
import { splitProblems } from './validate-split.js';

/** The implicit root of every DAG: builds the matrix rows from the request. */
export const FEATURE_INIT = 'feature_init';

export interface ConfigProblem {
  /** JSON path of the offending value, e.g. `feature_components[2].fs_keys[1].col`. */
  path: string;
  message: string;
}

/** A model configuration that failed validation; `problems` lists every finding with its JSON path. */
export class ModelConfigError extends LatticeError {
  constructor(
    readonly modelConfigId: string,
    readonly problems: readonly ConfigProblem[],
  ) {
    super(
      'INVALID_ARGUMENT',
      `invalid model config ${modelConfigId}:\n${problems.map((p) => `  - ${p.path || '(document)'}: ${p.message}`).join('\n')}`,
      { field: problems[0]?.path },
    );
    this.name = 'ModelConfigError';
  }
}

export type ComponentKind = 'feature' | 'model' | 'compute';

export type ComponentPlan =
  | {
      kind: 'feature';
      name: string;
      path: string;
      config: FeatureComponentConfig;
      required: boolean;
      writes: ColumnSpec[];
    }
  | {
      kind: 'model';
      name: string;
      path: string;
      config: ModelServingComponentConfig;
      required: boolean;
      writes: ColumnSpec[];
    }
  | {
      kind: 'compute';
      name: string;
      path: string;
      config: ComputeComponentConfig;
      required: boolean;
      writes: ColumnSpec[];
    };

/** A configuration that passed validation, with what the engine derives from it once per version. */
export interface ValidatedModel {
  readonly config: ModelConfig;
  readonly topology: Topology;
  /** Every component by name, in declaration order. */
  readonly components: ReadonlyMap<string, ComponentPlan>;
  /** Byte columns the components write into the target matrix. */
  readonly targetColumns: readonly ColumnSpec[];
  /** Byte columns slate components write into SlateData. */
  readonly slateColumns: readonly ColumnSpec[];
  /** Plain column names read but produced by no component: the request must supply them. */
  readonly requestFeatures: readonly string[];
}

const path = (parts: readonly PropertyKey[]) =>
  parts.reduce<string>(
    (acc, part) =>
      typeof part === 'number' ? `${acc}[${part}]` : acc ? `${acc}.${String(part)}` : String(part),
    '',
  );

function zodProblems(error: z.ZodError): ConfigProblem[] {
  return error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') {
      return {
        path: path(issue.path),
        message: `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`,
      };
    }
    return { path: path(issue.path), message: issue.message };
  });
}

/** The data type a config names, Triton spellings included (`BYTES` is STRING), made a vector when `vectorDim` > 0. */
function resolveType(name: string, vectorDim: number): DataType | undefined {
  const scalar = name.trim().toUpperCase() === 'BYTES' ? DataType.STRING : lookupDataType(name);
  if (scalar === undefined) return undefined;
  const info = dataTypeInfo(scalar);
  return vectorDim > 0 || info.isVector ? info.vector : scalar;
}

const isQualified = (column: string) => column.split(':').length >= 3;

interface Read {
  column: string;
  path: string;
  reader: string | undefined; // component name; undefined for response / logging
}

/**
 * Checks a model configuration document: its shape (schema.ts), then its meaning — the DAG (no
 * cycle, no unknown or unlisted component), data types, expressions, endpoint percentages, and that
 * every column read is produced, once, by a component that runs before the reader. Throws
 * ModelConfigError listing every problem with its JSON path.
 */
export function validateModelConfig(
  raw: unknown,
  options: { expectedId?: string; topologies: TopologyCache },
): ValidatedModel {
  const parsed = modelConfigSchema.safeParse(raw);
  const id = options.expectedId ?? (parsed.success ? parsed.data.model_config_id : '(unknown)');
  if (!parsed.success) throw new ModelConfigError(id, zodProblems(parsed.error));
  const config = parsed.data;
  const problems: ConfigProblem[] = [];
  const problem = (p: string, message: string) => problems.push({ path: p, message });

  if (options.expectedId !== undefined && config.model_config_id !== options.expectedId) {
    problem(
      'model_config_id',
      `is "${config.model_config_id}" but the document is stored as models/${options.expectedId}`,
    );
  }

  // Components: unique names across the three lists.
  const components = new Map<string, ComponentPlan>();
  const declare = (plan: ComponentPlan) => {
    if (plan.name === FEATURE_INIT)
      problem(`${plan.path}.name`, `"${FEATURE_INIT}" is the implicit root and cannot be redefined`);
    else if (components.has(plan.name))
      problem(`${plan.path}.name`, `component "${plan.name}" is defined more than once`);
    else components.set(plan.name, plan);
  };
  const reads: Read[] = [];
  const slateColumns: ColumnSpec[] = [];
  const targetColumns: ColumnSpec[] = [];
  const producers = new Map<string, { component: string; path: string }>();
  const produce = (spec: ColumnSpec, component: string, p: string, slate: boolean) => {
    const existing = producers.get(spec.name);
    if (existing) {
      problem(
        p,
        `column "${spec.name}" is already produced by ${existing.component} (${existing.path}); components write disjoint columns`,
      );
      return;
    }
    producers.set(spec.name, { component, path: p });
    (slate ? slateColumns : targetColumns).push(spec);
  };

  config.feature_components.forEach((fc, i) => {
    const p = `feature_components[${i}]`;
    const writes: ColumnSpec[] = [];
    fc.fs_keys.forEach((key, k) => {
      reads.push({ column: key.col, path: `${p}.fs_keys[${k}].col`, reader: fc.name });
    });
    fc.feature_groups.forEach((group, g) => {
      const dataType = resolveType(group.data_type, group.vector_dim);
      if (dataType === undefined) {
        problem(`${p}.feature_groups[${g}].data_type`, `unknown data type "${group.data_type}"`);
        return;
      }
      group.features.forEach((feature, f) => {
        const spec = {
          name: `${fc.column_prefix}${fc.entity}:${group.label}:${feature}`,
          dataType,
          vectorDim: group.vector_dim,
        };
        writes.push(spec);
        produce(spec, fc.name, `${p}.feature_groups[${g}].features[${f}]`, false);
      });
    });
    declare({ kind: 'feature', name: fc.name, path: p, config: fc, required: fc.required, writes });
  });

  config.model_serving_components.forEach((mc, i) => {
    const p = `model_serving_components[${i}]`;
    const writes: ColumnSpec[] = [];
    const total = mc.endpoints.reduce((sum, e) => sum + e.percentage, 0);
    if (Math.abs(total - 100) > 1e-9) problem(`${p}.endpoints`, `percentages sum to ${total}, not 100`);
    mc.inputs.forEach((input, k) => {
      if (resolveType(input.data_type, 0) === undefined)
        problem(`${p}.inputs[${k}].data_type`, `unknown data type "${input.data_type}"`);
      if (input.shape.some((d) => d === 0 || d < -1))
        problem(`${p}.inputs[${k}].shape`, 'dimensions must be positive (or -1 for "any")');
      input.features.forEach((column, f) => {
        reads.push({ column, path: `${p}.inputs[${k}].features[${f}]`, reader: mc.name });
      });
    });
    mc.outputs.forEach((output, k) => {
      const dataType = resolveType(output.data_type, output.vector_dim);
      if (dataType === undefined) {
        problem(`${p}.outputs[${k}].data_type`, `unknown data type "${output.data_type}"`);
        return;
      }
      output.columns.forEach((column, c) => {
        const spec = { name: column, dataType, vectorDim: output.vector_dim };
        writes.push(spec);
        produce(spec, mc.name, `${p}.outputs[${k}].columns[${c}]`, mc.slate);
      });
    });
    if (mc.calibration?.method === 'isotonic') {
      const { x, y } = mc.calibration;
      if (x.length !== y.length)
        problem(`${p}.calibration`, `isotonic x has ${x.length} points but y has ${y.length}`);
      if (x.some((v, j) => j > 0 && v <= x[j - 1]!))
        problem(`${p}.calibration.x`, 'must be strictly increasing');
    }
    declare({ kind: 'model', name: mc.name, path: p, config: mc, required: mc.required, writes });
  });

  config.compute_components.forEach((cc, i) => {
    const p = `compute_components[${i}]`;
    if ((cc.expression === undefined) === (cc.compute_id === undefined)) {
      problem(p, 'set exactly one of "expression" (in-process) or "compute_id" (remote numerix server)');
    }
    if (cc.compute_id !== undefined && cc.target === undefined)
      problem(`${p}.target`, 'a remote compute_id needs the numerix server "target" (host:port)');
    if (cc.expression !== undefined) {
      try {
        const compiled = compileExpression(cc.expression);
        for (const variable of compiled.variables) {
          if (!(variable in cc.score_mapping))
            problem(`${p}.score_mapping`, `expression variable "${variable}" has no mapping to a column`);
        }
      } catch (err) {
        problem(`${p}.expression`, isLatticeError(err) ? err.message : String(err));
      }
    }
    for (const [variable, column] of Object.entries(cc.score_mapping)) {
      reads.push({ column, path: `${p}.score_mapping.${variable}`, reader: cc.name });
    }
    const spec = {
      name: cc.output_column,
      dataType: cc.data_type === 'FP64' ? DataType.FP64 : DataType.FP32,
      vectorDim: 0,
    };
    produce(spec, cc.name, `${p}.output_column`, cc.slate);
    declare({ kind: 'compute', name: cc.name, path: p, config: cc, required: cc.required, writes: [spec] });
  });

  config.response.columns.forEach((column, i) => {
    reads.push({ column, path: `response.columns[${i}]`, reader: undefined });
  });
  config.logging.log_features.forEach((column, i) => {
    reads.push({ column, path: `logging.log_features[${i}]`, reader: undefined });
  });

  // The DAG: every name it mentions is a defined component, and every component is in it.
  const mentioned = new Set<string>();
  for (const [from, successors] of Object.entries(config.component_dependency)) {
    mentioned.add(from);
    if (!components.has(from) && from !== FEATURE_INIT)
      problem(`component_dependency.${from}`, `no component named "${from}" is defined`);
    successors.forEach((to, k) => {
      mentioned.add(to);
      if (!components.has(to))
        problem(`component_dependency.${from}[${k}]`, `no component named "${to}" is defined`);
    });
  }
  for (const plan of components.values()) {
    if (!mentioned.has(plan.name))
      problem(
        `${plan.path}.name`,
        `component "${plan.name}" is not in component_dependency, so it would never run`,
      );
  }
  if (components.size === 0) problem('', 'defines no components');
  problems.push(...shadowProblems(config));

  let topology: Topology | undefined;
  try {
    topology = options.topologies.get(config.component_dependency, { root: FEATURE_INIT });
  } catch (err) {
    if (!isLatticeError(err)) throw err;
    problem(err.field ?? 'component_dependency', err.message);
  }

  // Columns: every read is produced (by a component that runs earlier) or supplied by the request.
  const requestFeatures = new Set<string>(config.request_features ?? []);
  // Retrieval supplies its columns as the targets' request columns (validate-retrieval.ts).
  const retrieved = config.retrieval ? checkRetrieval(config.retrieval, problem) : [];
  for (const spec of retrieved) {
    const producer = producers.get(spec.name);
    if (producer) problem(producer.path, `column "${spec.name}" is also filled by retrieval`);
    requestFeatures.add(spec.name);
  }
  checkResponseOrder(
    config,
    (column) => {
      const spec = [...targetColumns, ...retrieved].find((c) => c.name === column);
      if (spec) return { spec, slate: false };
      const slate = slateColumns.find((c) => c.name === column);
      return slate ? { spec: slate, slate: true } : undefined;
    },
    problem,
  );
  const declaredRequest = config.request_features !== undefined;
  const inferredRequest: string[] = [];
  for (const read of reads) {
    if (read.column === config.target_id_column) continue;
    const producer = producers.get(read.column);
    if (producer === undefined) {
      if (requestFeatures.has(read.column)) continue;
      if (isQualified(read.column) || declaredRequest) {
        problem(
          read.path,
          `reads column "${read.column}", which no component produces${declaredRequest ? ' and request_features does not list' : ''}`,
        );
      } else {
        requestFeatures.add(read.column);
        inferredRequest.push(read.column);
      }
      continue;
    }
    if (
      read.reader !== undefined &&
      topology !== undefined &&
      !runsBefore(topology, producer.component, read.reader)
    ) {
      problem(
        read.path,
        `reads column "${read.column}" produced by ${producer.component}, which does not run before ${read.reader} in component_dependency`,
      );
    }
  }

  problems.push(...splitProblems(config, (column) => producers.get(column)?.component));

  if (problems.length > 0 || topology === undefined)
    throw new ModelConfigError(config.model_config_id, problems);
  return {
    config,
    topology,
    components,
    targetColumns,
    slateColumns,
    requestFeatures: declaredRequest ? [...requestFeatures] : inferredRequest,
  };
}

/** True when `to` is reachable from `from` along component_dependency edges. */
function runsBefore(topology: Topology, from: string, to: string): boolean {
  const start = topology.indexOf(from);
  const goal = topology.indexOf(to);
  if (start < 0 || goal < 0) return false;
  const seen = new Uint8Array(topology.nodes.length);
  const stack = [start];
  while (stack.length > 0) {
    const node = stack.pop()!;
    for (let e = topology.successorOffsets[node]!; e < topology.successorOffsets[node + 1]!; e++) {
      const next = topology.successorIndices[e]!;
      if (next === goal) return true;
      if (seen[next] === 0) {
        seen[next] = 1;
        stack.push(next);
      }
    }
  }
  return false;
}
