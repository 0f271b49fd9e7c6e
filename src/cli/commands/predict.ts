/**
 * `lattice predict`: one point-, pair- or slate-wise Predict from the command line. Context features
 * and targets come from flags or a JSON / CSV file; values are typed by the client (numbers,
 * booleans, lists) unless `--schema name=TYPE` says otherwise; scores are printed decoded per row,
 * with each row's error.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import { CsvParser } from '../../featurestore/csv-records.js';
import {
  OrchestratorClient,
  type PlainValue,
  type PredictResult,
  type TargetInput,
} from '../../orchestrator/client.js';
import { describeError, type ErrorCode, invalidArgument, LatticeError } from '../../platform/errors.js';
import { tlsOf } from '../../platform/http/index.js';
import { loadSettings } from '../../platform/settings/index.js';
import type { CliContext } from '../main.js';

export const predictUsage = `Usage: lattice predict --model-config ID (--target ID ... | --targets FILE) [options]
  One Predict call to the orchestrator (<host>:<orchestrator.port>, or --address) and its scores.
  --model-config ID     the model config to score with (e.g. catalog_ranker)
  --kind K              point (default), pair or slate
  --context k=v         a context feature, repeatable (user_id=u1); values are JSON when they parse
                        (12.5, true, [1,2]), text otherwise
  --target ID[:k=v;…]   a target id with optional features, repeatable (c1, c2:price=12.5)
  --targets FILE        targets from a JSON file ([{"id": "c1", "features": {...}}] or ["c1", ...]) or a
                        CSV file (an "id" column, every other column a feature)
  --pairs 0-1,1-2       pair-wise: pairs of target indexes
  --slates 0.1.2,3.4    slate-wise: slates of target indexes
  --schema name=TYPE    the data type of a feature (FP32, INT64, STRING, FP32_VECTOR, ...), repeatable
  --deadline-ms N       the call's deadline (default 5000)
  --address HOST:PORT   the orchestrator (default from the settings)
  --json                print the decoded answer as JSON
Exit status: 0 scored (rows may carry errors, shown per row), 1 the call failed or the server is
down, 2 bad usage.`;

/** A JSON value when the text is one (numbers, booleans, lists, objects), else the text itself. */
function plain(text: string): PlainValue {
  try {
    const value = JSON.parse(text) as unknown;
    if (value !== null && typeof value !== 'string') return value as PlainValue;
  } catch {
    // not JSON: text
  }
  return text;
}

function keyValue(text: string, flag: string): [string, string] {
  const at = text.indexOf('=');
  if (at <= 0) throw invalidArgument(`${flag} ${text}: write name=value`, flag.slice(2));
  return [text.slice(0, at), text.slice(at + 1)];
}

/** `c1` or `c2:price=12.5;brand=a`. */
export function parseTarget(text: string): TargetInput {
  const colon = text.indexOf(':');
  if (colon < 0) return { id: text };
  const features: Record<string, PlainValue> = {};
  for (const part of text
    .slice(colon + 1)
    .split(';')
    .filter(Boolean)) {
    const [name, value] = keyValue(part, '--target');
    features[name] = plain(value);
  }
  return { id: text.slice(0, colon), features };
}

/** Targets from a JSON or CSV file. */
export function readTargets(file: string): TargetInput[] {
  const text = readFileSync(file, 'utf8');
  if (/\.csv$/i.test(file)) {
    const parser = new CsvParser();
    const [header, ...records] = [...parser.push(text), ...parser.end()];
    const columns = header?.fields.map((c) => c.trim()) ?? [];
    const idAt = columns.indexOf('id');
    if (idAt < 0) throw invalidArgument(`${file}: the header has no "id" column`, 'targets');
    return records.map((record) => {
      if (record.error) throw invalidArgument(`${file} line ${record.line}: ${record.error}`, 'targets');
      const id = record.fields[idAt]?.trim();
      if (!id) throw invalidArgument(`${file} line ${record.line}: no id`, 'targets');
      const features: Record<string, PlainValue> = {};
      columns.forEach((name, col) => {
        if (col !== idAt && record.fields[col] !== undefined)
          features[name] = plain(record.fields[col]!.trim());
      });
      return { id, features };
    });
  }
  const parsed = JSON.parse(text) as unknown;
  if (!Array.isArray(parsed)) throw invalidArgument(`${file}: a JSON list of targets`, 'targets');
  return parsed.map((entry, i) => {
    if (typeof entry === 'string') return { id: entry };
    const target = entry as { id?: unknown; features?: Record<string, PlainValue> };
    if (typeof target?.id !== 'string') throw invalidArgument(`${file} [${i}]: no "id"`, 'targets');
    return target.features === undefined ? { id: target.id } : { id: target.id, features: target.features };
  });
}

function indexes(text: string, separator: string, count: number, flag: string): number[] {
  return text.split(separator).map((part) => {
    const n = Number(part);
    if (!Number.isInteger(n) || n < 0 || n >= count) {
      throw invalidArgument(`${flag}: ${part} is not a target index (0 to ${count - 1})`, flag.slice(2));
    }
    return n;
  });
}

function printTable(rows: { label: string; values: Record<string, unknown>; error: string }[]): void {
  const names = [...new Set(rows.flatMap((r) => Object.keys(r.values)))];
  const cell = (v: unknown) =>
    typeof v === 'number'
      ? String(Number(v.toPrecision(6)))
      : Array.isArray(v)
        ? `[${v.join(',')}]`
        : String(v);
  const table = rows.map((r) => [
    r.label,
    ...names.map((n) => (n in r.values ? cell(r.values[n]) : '-')),
    r.error || '-',
  ]);
  const header = ['ROW', ...names.map((n) => n.toUpperCase()), 'ERROR'];
  const widths = header.map((h, col) => Math.max(h.length, ...table.map((r) => r[col]!.length)));
  for (const row of [header, ...table])
    console.log(
      row
        .map((c, col) => c.padEnd(widths[col]!))
        .join('  ')
        .trimEnd(),
    );
}

function show(result: PredictResult, kind: string, json: boolean): void {
  if (json) {
    console.log(JSON.stringify(result, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2));
    return;
  }
  const rows =
    kind === 'point'
      ? result.targets.map((t) => ({ label: t.id, values: t.values, error: t.error }))
      : (kind === 'pair' ? result.pairs : result.slates).map((r, i) => ({
          label: `${kind} ${i}`,
          values: r.values,
          error: r.error,
        }));
  printTable(rows);
  const failed = rows.filter((r) => r.error).length;
  if (failed > 0) console.log(`${failed} of ${rows.length} rows have errors (their values are defaults)`);
}

function parsePredictArgs(args: string[]) {
  return parseArgs({
    args,
    options: {
      'model-config': { type: 'string' },
      kind: { type: 'string' },
      context: { type: 'string', multiple: true },
      target: { type: 'string', multiple: true },
      targets: { type: 'string' },
      pairs: { type: 'string' },
      slates: { type: 'string' },
      schema: { type: 'string', multiple: true },
      'deadline-ms': { type: 'string' },
      address: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
}

export async function runPredict(context: CliContext): Promise<void> {
  let input: Parameters<OrchestratorClient['pointWise']>[0] & {
    pairs?: { first: number; second: number }[];
    slates?: { targets: number[] }[];
  };
  let kind: string;
  let values: ReturnType<typeof parsePredictArgs>['values'];
  try {
    values = parsePredictArgs(context.argv).values;
    if (values.help) {
      console.log(predictUsage);
      return;
    }
    if (!values['model-config']) throw invalidArgument('--model-config is required', 'model-config');
    kind = values.kind ?? 'point';
    if (!['point', 'pair', 'slate'].includes(kind))
      throw invalidArgument('--kind is point, pair or slate', 'kind');
    const targets = [
      ...(values.target ?? []).map(parseTarget),
      ...(values.targets ? readTargets(values.targets) : []),
    ];
    if (targets.length === 0) throw invalidArgument('give targets: --target ID or --targets FILE', 'target');
    const deadlineMs = values['deadline-ms'] === undefined ? 5000 : Number(values['deadline-ms']);
    if (!(Number.isInteger(deadlineMs) && deadlineMs > 0))
      throw invalidArgument('--deadline-ms must be a positive integer');
    input = {
      modelConfigId: values['model-config'],
      context: Object.fromEntries(
        (values.context ?? []).map((c) => {
          const [name, value] = keyValue(c, '--context');
          return [name, plain(value)];
        }),
      ),
      targets,
      schema: Object.fromEntries((values.schema ?? []).map((s) => keyValue(s, '--schema'))),
      deadlineMs,
    };
    if (kind === 'pair') {
      if (!values.pairs) throw invalidArgument('--kind pair needs --pairs (e.g. 0-1,1-2)', 'pairs');
      input.pairs = values.pairs.split(',').map((p) => {
        const [first, second] = indexes(p, '-', targets.length, '--pairs');
        if (second === undefined) throw invalidArgument(`--pairs: ${p} is not a pair like 0-1`, 'pairs');
        return { first: first!, second };
      });
    }
    if (kind === 'slate') {
      if (!values.slates) throw invalidArgument('--kind slate needs --slates (e.g. 0.1.2,3.4)', 'slates');
      input.slates = values.slates
        .split(',')
        .map((s) => ({ targets: indexes(s, '.', targets.length, '--slates') }));
    }
  } catch (err) {
    console.error(`lattice predict: ${describeError(err)}\n\n${predictUsage}`);
    process.exitCode = 2;
    return;
  }
  const settings = loadSettings({ file: context.settingsFile });
  const host = settings.host === '0.0.0.0' || settings.host === '::' ? '127.0.0.1' : settings.host;
  const address = values.address ?? `${host}:${settings.orchestrator.port}`;
  const client = new OrchestratorClient(address, { tls: tlsOf(settings).client });
  try {
    const result =
      kind === 'pair'
        ? await client.pairWise({ ...input, pairs: input.pairs! })
        : kind === 'slate'
          ? await client.slateWise({ ...input, slates: input.slates! })
          : await client.pointWise(input);
    show(result, kind, values.json === true);
  } catch (err) {
    const grpc = err as Partial<ServiceError>;
    if (grpc.code === grpcStatus.UNAVAILABLE) {
      throw new LatticeError(
        'UNAVAILABLE',
        `the orchestrator is not reachable at ${address} (${grpc.details ?? describeError(err)}); start it with "lattice up", or point --address at it`,
      );
    }
    if (grpc.code === undefined) throw err;
    const name = grpcStatus[grpc.code];
    const code: ErrorCode =
      name === 'NOT_FOUND' || name === 'INVALID_ARGUMENT' || name === 'DEADLINE_EXCEEDED' ? name : 'INTERNAL';
    throw new LatticeError(code, `predict failed (${name}): ${grpc.details ?? describeError(err)}`);
  } finally {
    client.close();
  }
}
