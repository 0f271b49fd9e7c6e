/**
 * Where a profiled phase's main-thread time went, from a V8 CPU profile (.cpuprofile): self time by
 * code group (a file of the project, a package, a node: module, V8's own entries) and the inclusive
 * time of the project's functions, both per call of the phase, so the service's cost above its floor
 * reads as microseconds per request by part (validation, configuration, guard, result assembly,
 * metrics, gRPC, codec, GC).
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The group a frame's self time is counted in. */
function groupOf(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  if (url === '') return functionName.startsWith('(') ? functionName : `(native) ${functionName}`;
  if (url.startsWith('node:')) return url;
  const project = url.match(/\/(src|bench|test)\/(.+)$/);
  if (project && !url.includes('/node_modules/')) return `${project[1]}/${project[2]}`;
  const pkg = url.match(/\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(.+)$/);
  if (pkg)
    return pkg[1] === '@grpc/grpc-js' ? `@grpc/grpc-js/${pkg[2]!.replace(/^build\/src\//, '')}` : pkg[1]!;
  return url;
}

// Line numbers are left out: under tsx they are those of the transpiled code.
const label = (frame: ProfileNode['callFrame']) => `${groupOf(frame)} ${frame.functionName || '(anonymous)'}`;
const isProject = (frame: ProfileNode['callFrame']) =>
  /\/src\//.test(frame.url) && !frame.url.includes('/node_modules/');

/** Lines describing the profile in `file` of a phase that made `calls` calls. */
export function summariseProfile(file: string, calls: number, top = 18): string[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const charged = new Map<string, number>();
  let total = 0;
  let idle = 0;
  profile.samples.forEach((id, i) => {
    // A sample's time: the gap to the next sample (the last takes the one before it).
    const us = profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0;
    const node = byId.get(id)!;
    total += us;
    if (node.callFrame.functionName === '(idle)') {
      idle += us;
      return;
    }
    const group = groupOf(node.callFrame);
    self.set(group, (self.get(group) ?? 0) + us);
    // Each project function on the stack once, however deep it recurses; the innermost one is
    // charged with the sample (a library's or the runtime's time goes to the project code calling it).
    const seen = new Set<string>();
    let innermost: string | undefined;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)!.callFrame;
      if (!isProject(frame)) continue;
      const key = label(frame);
      innermost ??= key;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
    const owner =
      innermost ?? `outside the project's code: ${group.startsWith('(') ? group : 'libraries and runtime'}`;
    charged.set(owner, (charged.get(owner) ?? 0) + us);
  });
  const busy = total - idle;
  const perCall = (us: number) => `${(us / calls).toFixed(1).padStart(6)} µs/call`;
  const share = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)} %`;
  const lines = [
    `main thread ${(total / 1000).toFixed(0)} ms sampled over ${calls} calls: busy ${(busy / 1000).toFixed(0)} ms ` +
      `(${(busy / calls).toFixed(1)} µs/call), idle ${(idle / 1000).toFixed(0)} ms`,
    'self time by code:',
  ];
  for (const [group, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    lines.push(`  ${perCall(us)} ${share(us)}  ${group}`);
  }
  lines.push(
    "charged to the innermost project function on the stack (the libraries' and runtime's time it called for included):",
  );
  for (const [key, us] of [...charged].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    lines.push(`  ${perCall(us)} ${share(us)}  ${key}`);
  }
  lines.push("inclusive time of the project's functions (a function's callees included):");
  for (const [key, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    lines.push(`  ${perCall(us)} ${share(us)}  ${key}`);
  }
  return lines;
}
