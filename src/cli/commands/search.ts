/**
 * `lattice search`: one vss Search from the command line, by candidate id or by vector, with
 * filters, attributes and pages; a table on a terminal, `--json` for scripts.
 */
import { readFileSync } from 'node:fs';
import { describeError, invalidArgument } from '../../platform/errors.js';
import { FILTER_OPS, type FilterOpName, type SearchFilter, VssClient } from '../../vss/client.js';
import { callFailure } from '../call-failure.js';
import { clientSettings } from '../client-settings.js';
import { type Invocation, UsageError } from '../command-kit.js';
import { textTable } from '../text-table.js';
import type { SearchOptions } from './search.command.js';

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

/** The search the options describe; a mistake in them is a UsageError. */
function searchInput(values: SearchOptions): Parameters<VssClient['search']>[0] {
  if ((values.id === undefined) === (values.vector === undefined)) {
    throw new UsageError('give exactly one of --id and --vector');
  }
  try {
    return {
      entity: values.entity,
      model: values.model,
      variant: values.variant,
      ...(values.id === undefined ? { vector: parseVector(values.vector!) } : { id: values.id }),
      filters: (values.filter ?? []).map(parseFilter),
      attributes: values.attributes?.split(',').filter(Boolean) ?? [],
      ...(values.pageSize === undefined ? {} : { pageSize: values.pageSize }),
      ...(values.pageToken === undefined ? {} : { pageToken: values.pageToken }),
    };
  } catch (err) {
    throw new UsageError(describeError(err));
  }
}

export async function runSearch({ options: values, context }: Invocation<SearchOptions>): Promise<void> {
  const input = searchInput(values);
  const { settings, options } = clientSettings(values, context.settingsFile);
  const host = settings.host === '0.0.0.0' || settings.host === '::' ? '127.0.0.1' : settings.host;
  const target = values.address ?? `${host}:${settings.vss.servingPort}`;
  const client = new VssClient(target, options);
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
    console.log(textTable([header, ...rows]));
    if (page.candidates.length === 0) console.log('(no candidates)');
    if (page.nextPageToken) console.log(`next page: --page-token ${page.nextPageToken}`);
  } catch (err) {
    throw callFailure(err, {
      what: 'search',
      server: 'vss serving',
      address: target,
      reach: 'start it with "lattice up" or "lattice vss", or point --address at it',
    });
  } finally {
    client.close();
  }
}
