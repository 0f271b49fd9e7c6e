/**
 * A model config's DAG drawn as SVG: dagre lays out the components (top to bottom, each dependency
 * an edge), and each node shows its kind, outputs, deadline and endpoint. A table beside it lists the
 * same with every input and output, which is also what a screen reader reads. Retrievers (a config's
 * retrieval stage) sit above feature_init, each showing the vss model/variant and k/quota it asks.
 */
import dagre from '@dagrejs/dagre';
import { useMemo } from 'preact/hooks';
import type { Dag, DagNode } from '../types';

const WIDTH = 200;
const HEIGHT = 64;

const KIND_LABEL: Record<DagNode['kind'], string> = {
  retriever: 'retriever',
  feature_init: 'feature init',
  feature: 'feature',
  model: 'model',
  compute: 'compute',
};

function layout(dag: Dag) {
  const graph = new dagre.graphlib.Graph();
  graph.setGraph({ rankdir: 'TB', nodesep: 24, ranksep: 40, marginx: 8, marginy: 8 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const node of dag.nodes) graph.setNode(node.id, { width: WIDTH, height: HEIGHT });
  for (const edge of dag.edges)
    if (graph.hasNode(edge.from) && graph.hasNode(edge.to)) graph.setEdge(edge.from, edge.to);
  dagre.layout(graph);
  const info = graph.graph();
  return {
    width: Math.max(info.width ?? WIDTH, WIDTH),
    height: Math.max(info.height ?? HEIGHT, HEIGHT),
    nodes: dag.nodes.map((node) => ({ node, at: graph.node(node.id) })),
    edges: graph.edges().map((e) => ({ key: `${e.v}->${e.w}`, points: graph.edge(e).points ?? [] })),
  };
}

/** What a retriever searches and how much: `products/all k 100 → 40`. */
const retrieverDetail = (node: DagNode) =>
  `${node.vss_model ?? '?'}/${node.variant ?? '?'} k ${node.k ?? '?'} → ${node.quota ?? node.k ?? '?'}`;

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export function DagView({ dag }: { dag: Dag }) {
  const drawn = useMemo(() => layout(dag), [dag]);
  return (
    <div class="dag">
      <svg
        viewBox={`0 0 ${drawn.width} ${drawn.height}`}
        width={drawn.width}
        role="img"
        aria-label={`DAG of ${dag.nodes.length} components and ${dag.edges.length} dependencies`}
      >
        <defs>
          <marker
            id="arrow"
            viewBox="0 0 10 10"
            refX="9"
            refY="5"
            markerWidth="8"
            markerHeight="8"
            orient="auto"
          >
            <path d="M0,0 L10,5 L0,10 z" class="arrowhead" />
          </marker>
        </defs>
        {drawn.edges.map((edge) => (
          <polyline
            key={edge.key}
            class="edge"
            points={edge.points.map((p: { x: number; y: number }) => `${p.x},${p.y}`).join(' ')}
            marker-end="url(#arrow)"
          />
        ))}
        {drawn.nodes.map(({ node, at }) => (
          <g
            key={node.id}
            class={`node ${node.kind}`}
            transform={`translate(${at.x - WIDTH / 2},${at.y - HEIGHT / 2})`}
          >
            <title>{`${node.id} (${KIND_LABEL[node.kind]})\ninputs: ${node.inputs.join(', ')}\noutputs: ${node.outputs.join(', ')}`}</title>
            <rect width={WIDTH} height={HEIGHT} rx="6" />
            <text x="8" y="16" class="kind">
              {KIND_LABEL[node.kind]}
              {node.required ? '' : ' (optional)'}
              {node.deadline_ms === undefined ? '' : ` · ${node.deadline_ms} ms`}
            </text>
            <text x="8" y="34" class="name">
              {clip(node.id, 26)}
            </text>
            <text x="8" y="52" class="detail">
              {clip(
                node.kind === 'retriever'
                  ? retrieverDetail(node)
                  : (node.endpoint ?? `→ ${node.outputs.join(', ')}`),
                32,
              )}
            </text>
          </g>
        ))}
      </svg>
      <table class="components">
        <caption>Components</caption>
        <thead>
          <tr>
            <th scope="col">Component</th>
            <th scope="col">Kind</th>
            <th scope="col">Inputs</th>
            <th scope="col">Outputs</th>
            <th scope="col">Deadline</th>
            <th scope="col">Endpoint</th>
          </tr>
        </thead>
        <tbody>
          {dag.nodes.map((node) => (
            <tr key={node.id}>
              <th scope="row">{node.id}</th>
              <td>{KIND_LABEL[node.kind]}</td>
              <td>{node.inputs.join(', ') || '—'}</td>
              <td>{node.outputs.join(', ') || '—'}</td>
              <td>{node.deadline_ms === undefined ? '—' : `${node.deadline_ms} ms`}</td>
              <td>
                {node.endpoint ?? '—'}
                {node.kind === 'retriever' ? ` (${retrieverDetail(node)})` : ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
