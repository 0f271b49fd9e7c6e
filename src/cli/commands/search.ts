/**
 * `lattice search`: one vss Search from the command line, by candidate id or by vector, with
 * filters, attributes and pages; a table on a terminal, `--json` for scripts.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import { describeError, type ErrorCode, invalidArgument, LatticeError } from '../../platform/errors.js';
import { tlsOf } from '../../platform/http/index.js';
import { loadSettings } from '../../platform/settings/index.js';
import { FILTER_OPS, type FilterOpName, type SearchFilter, VssClient } from '../../vss/client.js';
import type { CliContext } from '../main.js';

export const searchUsage = `Usage: lattice search --entity E --model M [--variant V] (--id ID | --vector V) [options]
  One page of a vss Search (vss.v1.SimilaritySearch on <host>:<vss.servingPort>, or --target).
  --id ID               search near this candidate's embedding (it is not returned itself)
  --vector V            search near this vector: comma-separated numbers, or @file.json (a JSON array);
                        one that starts with "-" is written --vector=-0.1,…
  --variant V           the variant to search (default "all")
  --filter F            an attribute filter, repeatable: field=value (IN), field!=value (NOT_IN),
                        field:OP:v1,v2 with OP one of ${FILTER_OPS.join(', ')}
  --attributes A,B      attributes to print with each candidate
  --page-size N         candidates per page (default 10, at most 1000)
  --page-token T        the next page of an earlier search (printed after each page)
  --target HOST:PORT    vss serving (default from the settings)
  --json                print the page as JSON
Exit status: 0 found, 1 the server refused or is down, 2 bad usage.`;

/** `brand=a`, `brand!=a`, `price:LT:10`, `price:BETWEEN:1,5`. */
export function parseFilter(text: string): SearchFilter {
  const op = /^([^:=!]+):([A-Z_]+)(?::(.*))?$/.exec(text);
  if (op) {
    const name = op[2] as FilterOpName;
    if (!FILTER_OPS.includes(name)) {
      throw invalidArgument(
        `--filter ${text}: unknown op ${name} (one of ${FILTER_OPS.join(', ')})`,
        'filter',
      );
    }
    return { field: op[1]!, op: name, values: op[3] === undefined || op[3] === '' ? [] : op[3].split(',') };
  }
  const not = /^([^=!]+)!=(.*)$/.exec(text);
  if (not) return { field: not[1]!, op: 'NOT_IN', values: not[2]!.split(',') };
  const eq = /^([^=!]+)=(.*)$/.exec(text);
  if (eq) return { field: eq[1]!, op: 'IN', values: eq[2]!.split(',') };
  throw invalidArgument(`--filter ${text}: write field=value, field!=value or field:OP:values`, 'filter');
}

function parseVector(text: string): number[] {
  const raw = text.startsWith('@')
    ? (JSON.parse(readFileSync(text.slice(1), 'utf8')) as unknown)
    : text.split(',');
  if (!Array.isArray(raw) || raw.length === 0)
    throw invalidArgument('--vector must be a list of numbers', 'vector');
  return raw.map((x, i) => {
    const n = Number(x);
    if (!Number.isFinite(n))
      throw invalidArgument(`--vector element ${i} is not a number: ${String(x)}`, 'vector');
    return n;
  });
}

const USAGE_EXIT = 2;

export async function runSearch(context: CliContext): Promise<void> {
  let values: ReturnType<typeof parse>['values'];
  function parse() {
    return parseArgs({
      args: context.argv,
      options: {
        entity: { type: 'string' },
        model: { type: 'string' },
        variant: { type: 'string' },
        id: { type: 'string' },
        vector: { type: 'string' },
        filter: { type: 'string', multiple: true },
        attributes: { type: 'string' },
        'page-size': { type: 'string' },
        'page-token': { type: 'string' },
        target: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    });
  }
  try {
    values = parse().values;
    if (values.help) {
      console.log(searchUsage);
      return;
    }
    if (!values.entity || !values.model) throw invalidArgument('--entity and --model are required');
    if ((values.id === undefined) === (values.vector === undefined)) {
      throw invalidArgument('give exactly one of --id and --vector');
    }
  } catch (err) {
    console.error(`lattice search: ${describeError(err)}\n\n${searchUsage}`);
    process.exitCode = USAGE_EXIT;
    return;
  }
  let input: Parameters<VssClient['search']>[0];
  try {
    const pageSize = values['page-size'] === undefined ? undefined : Number(values['page-size']);
    if (pageSize !== undefined && !(Number.isInteger(pageSize) && pageSize > 0)) {
      throw invalidArgument('--page-size must be a positive integer', 'page-size');
    }
    input = {
      entity: values.entity,
      model: values.model,
      variant: values.variant ?? 'all',
      ...(values.id === undefined ? { vector: parseVector(values.vector!) } : { id: values.id }),
      filters: (values.filter ?? []).map(parseFilter),
      attributes: values.attributes?.split(',').filter(Boolean) ?? [],
      ...(pageSize === undefined ? {} : { pageSize }),
      ...(values['page-token'] === undefined ? {} : { pageToken: values['page-token'] }),
    };
  } catch (err) {
    console.error(`lattice search: ${describeError(err)}\n\n${searchUsage}`);
    process.exitCode = USAGE_EXIT;
    return;
  }
  const settings = loadSettings({ file: context.settingsFile });
  const host = settings.host === '0.0.0.0' || settings.host === '::' ? '127.0.0.1' : settings.host;
  const target = values.target ?? `${host}:${settings.vss.servingPort}`;
  const client = new VssClient(target, { tls: tlsOf(settings).client });
  try {
    const page = await client.search(input);
    if (values.json) {
      console.log(JSON.stringify(page, null, 2));
      return;
    }
    const attributes = input.attributes ?? [];
    const rows = page.candidates.map((c, i) => [
      String(i + 1),
      c.id,
      c.score.toFixed(4),
      ...attributes.map((a) => c.attributes[a] ?? '-'),
    ]);
    const header = ['#', 'ID', 'SCORE', ...attributes.map((a) => a.toUpperCase())];
    const widths = header.map((h, col) => Math.max(h.length, ...rows.map((r) => r[col]!.length)));
    for (const row of [header, ...rows])
      console.log(row.map((cell, col) => cell.padEnd(widths[col]!)).join('  '));
    if (page.candidates.length === 0) console.log('(no candidates)');
    if (page.nextPageToken) console.log(`next page: --page-token ${page.nextPageToken}`);
  } catch (err) {
    const grpc = err as Partial<ServiceError>;
    if (grpc.code === grpcStatus.UNAVAILABLE) {
      throw new LatticeError(
        'UNAVAILABLE',
        `vss serving is not reachable at ${target} (${grpc.details ?? describeError(err)}); start it with "lattice up" or "lattice vss", or point --target at it`,
      );
    }
    const name = grpc.code === undefined ? undefined : grpcStatus[grpc.code];
    const code: ErrorCode =
      name === 'NOT_FOUND' || name === 'INVALID_ARGUMENT' || name === 'DEADLINE_EXCEEDED' ? name : 'INTERNAL';
    throw new LatticeError(code, `search failed (${name ?? 'error'}): ${grpc.details ?? describeError(err)}`);
  } finally {
    client.close();
  }
}
