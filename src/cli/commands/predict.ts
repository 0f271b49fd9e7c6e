/**
 * `lattice predict`: one point-, pair- or slate-wise Predict from the command line. Context features
 * and targets come from flags or a JSON / CSV file; values are typed by the client (numbers,
 * booleans, lists) unless `--schema name=TYPE` says otherwise; scores are printed decoded per row,
 * with each row's error.
 */
import { readFileSync } from 'node:fs';
import type { Metadata } from '@grpc/grpc-js';
import { CsvParser } from '../../featurestore/csv-records.js';
import {
  OrchestratorClient,
  type PlainValue,
  type PredictResult,
  type RequestTimings,
  type TargetInput,
  timingsOf,
} from '../../orchestrator/client.js';
import { describeError, invalidArgument } from '../../platform/errors.js';
import { callFailure } from '../call-failure.js';
import { clientSettings } from '../client-settings.js';
import { type Invocation, UsageError } from '../command-kit.js';
import { textTable } from '../text-table.js';
import type { PredictOptions } from './predict.command.js';

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
    const [name, value] = keyValue(part, '--target-id');
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
  console.log(textTable([header, ...table]));
}

function show(result: PredictResult, kind: string, json: boolean, requested: string): void {
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
  for (const error of result.errors) console.log(`error: ${error}`);
  if (result.trackingId) console.log(`tracking id: ${result.trackingId}`);
  // Said only when another config served it: an arm of the requested config's sticky A/B split.
  if (result.servedModelConfigId && result.servedModelConfigId !== requested)
    console.log(`served by: ${result.servedModelConfigId} (an arm of ${requested}'s split)`);
  if (result.timings) printTimings(result.timings);
}

/** The components in the order the DAG ran them, then the total. */
function printTimings(timings: RequestTimings): void {
  const ms = (value: number) => value.toFixed(3);
  console.log('');
  console.log(
    textTable([
      ['COMPONENT', 'KIND', 'STATE', 'START_MS', 'DURATION_MS'],
      ...timings.components.map((c) => [c.name, c.kind, c.state, ms(c.start_ms), ms(c.duration_ms)]),
    ]),
  );
  if (timings.omitted) console.log(`${timings.omitted} more components not shown (the trailer's size limit)`);
  console.log(`total: ${ms(timings.total_ms)} ms`);
}

type PredictInput = Parameters<OrchestratorClient['pointWise']>[0] & {
  pairs?: { first: number; second: number }[];
  slates?: { targets: number[] }[];
};

/** The request the options describe; a mistake in them is a UsageError. */
function predictInput(values: PredictOptions): PredictInput {
  try {
    const targets = [
      ...(values.targetId ?? []).map(parseTarget),
      ...(values.targets ? readTargets(values.targets) : []),
    ];
    // A PointWise request may give none: a config with a retrieval stage finds its own targets.
    if (targets.length === 0 && values.kind !== 'point')
      throw new UsageError('give targets: --target-id ID or --targets FILE');
    const input: PredictInput = {
      modelConfigId: values.modelConfig,
      context: Object.fromEntries(
        (values.context ?? []).map((c) => {
          const [name, value] = keyValue(c, '--context');
          return [name, plain(value)];
        }),
      ),
      targets,
      schema: Object.fromEntries((values.schema ?? []).map((s) => keyValue(s, '--schema'))),
      deadlineMs: values.deadlineMs,
      ...(values.trackingId === undefined ? {} : { trackingId: values.trackingId }),
      ...(values.timings === true ? { timings: true } : {}),
    };
    if (values.kind === 'pair') {
      if (!values.pairs) throw new UsageError('--kind pair needs --pairs (e.g. 0-1,1-2)');
      input.pairs = values.pairs
        .flatMap((list) => list.split(','))
        .map((p) => {
          const [first, second] = indexes(p, '-', targets.length, '--pairs');
          if (second === undefined) throw new UsageError(`--pairs: ${p} is not a pair like 0-1`);
          return { first: first!, second };
        });
    }
    if (values.kind === 'slate') {
      if (!values.slates) throw new UsageError('--kind slate needs --slates (e.g. 0.1.2,3.4)');
      input.slates = values.slates
        .flatMap((list) => list.split(','))
        .map((s) => ({ targets: indexes(s, '.', targets.length, '--slates') }));
    }
    return input;
  } catch (err) {
    // A target file that cannot be read or parsed is the command line's mistake too.
    if (err instanceof UsageError) throw err;
    throw new UsageError(describeError(err));
  }
}

export async function runPredict({ options: values, context }: Invocation<PredictOptions>): Promise<void> {
  const kind = values.kind;
  const input = predictInput(values);
  const { settings, options } = clientSettings(values, context.settingsFile);
  const host = settings.host === '0.0.0.0' || settings.host === '::' ? '127.0.0.1' : settings.host;
  const address = values.address ?? `${host}:${settings.orchestrator.port}`;
  const client = new OrchestratorClient(address, options);
  try {
    const result =
      kind === 'pair'
        ? await client.pairWise({ ...input, pairs: input.pairs! })
        : kind === 'slate'
          ? await client.slateWise({ ...input, slates: input.slates! })
          : await client.pointWise(input);
    show(result, kind, values.json === true, input.modelConfigId);
  } catch (err) {
    // A failed call that asked still says how far its DAG got (which component failed, what was skipped).
    const timings =
      values.timings === true ? timingsOf((err as { metadata?: Metadata }).metadata) : undefined;
    if (timings) printTimings(timings);
    throw callFailure(err, {
      what: 'predict',
      server: 'the orchestrator',
      address,
      reach: 'start it with "lattice up", or point --address at it',
    });
  } finally {
    client.close();
  }
}
