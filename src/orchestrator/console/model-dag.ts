/**
 * A model config's DAG as the console draws it: one node per component (and the implicit
 * feature_init root that builds the rows from the request), by kind, with the columns each reads
 * and writes, its deadline and where it calls; one edge per dependency of component_dependency
 * (the root's implicit edges included), from the validated plan the registry runs. A config with a
 * `retrieval` stage has one `retriever` node per retriever, each feeding feature_init: the
 * candidates they find become the targets the root builds the rows of.
 */
import { FEATURE_INIT, type ValidatedModel } from '../config/index.js';

export type DagNodeKind = 'retriever' | 'feature_init' | 'feature' | 'model' | 'compute';

export interface DagNode {
  id: string;
  kind: DagNodeKind;
  /** Columns it reads. */
  inputs: string[];
  /** Columns it writes. */
  outputs: string[];
  deadline_ms?: number;
  /** Where it calls: the model server targets with their percentages, the numerix server, or `in-process`. */
  endpoint?: string;
  required: boolean;
  /** Feature components: the feature store entity. */
  entity?: string;
  /** Model serving components: the model name (and version when pinned). */
  model?: string;
  /** Compute components: the expression run in process, or the numerix compute_id. */
  expression?: string;
  compute_id?: string;
  /** Runs once per pair or slate rather than per target. */
  slate?: boolean;
  /** Retrievers: the vss model and variant searched, the candidates asked and the most kept. */
  vss_model?: string;
  variant?: string;
  k?: number;
  quota?: number;
}

export interface DagEdge {
  from: string;
  to: string;
}

export interface ModelDag {
  nodes: DagNode[];
  edges: DagEdge[];
}

export function modelDag(model: ValidatedModel): ModelDag {
  const { config, topology } = model;
  const nodes: DagNode[] = [];
  const edges: DagEdge[] = [];
  const retrieval = config.retrieval;
  for (const retriever of retrieval?.retrievers ?? []) {
    // Retriever names are their own namespace: one named as a component gets a distinct node id.
    const id = model.components.has(retriever.name) ? `${retriever.name} (retriever)` : retriever.name;
    const query = retriever.query;
    nodes.push({
      id,
      kind: 'retriever',
      inputs: unique(
        [
          query.context_feature,
          query.candidate_id_from,
          query.entity_embedding?.id_from,
          ...retriever.filters.map((f) => f.values_from),
        ].filter((name): name is string => name !== undefined),
      ),
      outputs: [
        config.target_id_column,
        retriever.score_column ?? `${retriever.name}_score`,
        ...retriever.attributes.map((a) => a.column ?? a.name),
      ],
      deadline_ms: retrieval?.deadline_ms,
      endpoint: retriever.target,
      required: retriever.required,
      entity: retriever.entity,
      vss_model: retriever.model,
      variant: retriever.variant,
      k: retriever.k,
      quota: retriever.quota ?? retriever.k,
    });
    edges.push({ from: id, to: FEATURE_INIT });
  }
  nodes.push({
    id: FEATURE_INIT,
    kind: 'feature_init',
    inputs: [],
    outputs: [config.target_id_column, ...model.requestFeatures],
    required: true,
  });
  for (const plan of model.components.values()) {
    const outputs = plan.writes.map((spec) => spec.name);
    switch (plan.kind) {
      case 'feature':
        nodes.push({
          id: plan.name,
          kind: 'feature',
          inputs: unique(plan.config.fs_keys.map((key) => key.col)),
          outputs,
          deadline_ms: plan.config.deadline_ms,
          endpoint: 'feature store',
          required: plan.required,
          entity: plan.config.entity,
        });
        break;
      case 'model':
        nodes.push({
          id: plan.name,
          kind: 'model',
          inputs: unique(plan.config.inputs.flatMap((input) => input.features)),
          outputs,
          deadline_ms: plan.config.deadline_ms,
          endpoint: plan.config.endpoints
            .map((e) => (plan.config.endpoints.length === 1 ? e.target : `${e.target} (${e.percentage} %)`))
            .join(', '),
          required: plan.required,
          model: plan.config.model_version
            ? `${plan.config.model_name}:${plan.config.model_version}`
            : plan.config.model_name,
          slate: plan.config.slate,
        });
        break;
      case 'compute': {
        const node: DagNode = {
          id: plan.name,
          kind: 'compute',
          inputs: unique(Object.values(plan.config.score_mapping)),
          outputs,
          deadline_ms: plan.config.deadline_ms,
          endpoint: plan.config.target ?? 'in-process',
          required: plan.required,
          slate: plan.config.slate,
        };
        if (plan.config.expression !== undefined) node.expression = plan.config.expression;
        if (plan.config.compute_id !== undefined) node.compute_id = plan.config.compute_id;
        nodes.push(node);
        break;
      }
    }
  }
  for (const from of topology.nodes) {
    for (const to of topology.successorsOf(from)) edges.push({ from, to });
  }
  return { nodes, edges };
}

const unique = (names: readonly string[]) => [...new Set(names)];
