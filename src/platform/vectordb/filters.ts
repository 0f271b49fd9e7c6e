/**
 * The payload filter model of vss (vss.v1 `Filter`): validation into a compiled form and evaluation
 * against a payload. The vector DB adapters and serving share it, so a filter means the same thing
 * wherever it is applied. Semantics are documented on {@link FilterOp}.
 */
import { invalidArgument } from '../errors.js';
import { quote } from '../quote.js';
import { FILTER_OPS, type Filter, type FilterOp, type Payload, type PayloadValue } from './vector-db.js';

export type CompiledFilter =
  | {
      kind: 'match';
      field: string;
      /** NOT_IN */
      negate: boolean;
      strings: ReadonlySet<string>;
      numbers: ReadonlySet<number>;
      booleans: ReadonlySet<boolean>;
    }
  | { kind: 'exists'; field: string; negate: boolean }
  | {
      kind: 'range';
      field: string;
      low: number;
      lowInclusive: boolean;
      high: number;
      highInclusive: boolean;
    };

/** Index tokens of one scalar payload value: the type is part of the token, so "1" ≠ 1 ≠ true. */
export function valueToken(value: string | number | boolean): string {
  if (typeof value === 'string') return `s:${value}`;
  if (typeof value === 'number') return `n:${String(value === 0 ? 0 : value)}`;
  return `b:${String(value)}`;
}

const tokensOf = new WeakMap<CompiledFilter, readonly string[]>();

/** The tokens a compiled IN / NOT_IN filter looks up in an inverted index (built once per compiled filter). */
export function matchTokens(filter: Extract<CompiledFilter, { kind: 'match' }>): readonly string[] {
  let tokens = tokensOf.get(filter);
  if (tokens === undefined) {
    tokens = [
      ...[...filter.strings].map((s) => valueToken(s)),
      ...[...filter.numbers].map((n) => valueToken(n)),
      ...[...filter.booleans].map((b) => valueToken(b)),
    ];
    tokensOf.set(filter, tokens);
  }
  return tokens;
}

function parseNumber(text: string, field: string): number {
  const value = text.trim() === '' ? Number.NaN : Number(text);
  if (!Number.isFinite(value)) throw invalidArgument(`${field} must be a number, got ${quote(text)}`, field);
  return value;
}

/**
 * Compiled filters by the filter object they came from. A Filter handed to the port is treated as
 * immutable: serving passes the same objects to every search of a request (each query, each step of
 * its candidate window), and a filter of 100,000 values was compiled into its sets once per search.
 */
const compiled = new WeakMap<Filter, CompiledFilter>();
const keys = new WeakMap<Filter, string>();

/** A stable text key of a filter list (same fields, operators and values, same key), computed once per filter object. */
export function filtersKey(filters: readonly Filter[]): string {
  let key = '';
  for (const filter of filters) {
    let own = keys.get(filter);
    if (own === undefined) {
      own = JSON.stringify([filter.field, filter.op, filter.values]);
      keys.set(filter, own);
    }
    key += key === '' ? own : `,${own}`;
  }
  return key;
}

function compileOne(filter: Filter, at: string): CompiledFilter {
  if (typeof filter !== 'object' || filter === null) throw invalidArgument(`${at} must be a filter`, at);
  const known = compiled.get(filter);
  if (known) return known;
  const result = compileNew(filter, at);
  compiled.set(filter, result);
  return result;
}

function compileNew(filter: Filter, at: string): CompiledFilter {
  const { field, op } = filter;
  if (typeof field !== 'string' || field.length === 0) {
    throw invalidArgument(`${at}.field must be a non-empty string`, `${at}.field`);
  }
  if (!FILTER_OPS.includes(op)) {
    throw invalidArgument(
      `${at}.op must be one of ${FILTER_OPS.join(', ')}, got ${quote(String(op))}`,
      `${at}.op`,
    );
  }
  const values = filter.values ?? [];
  const where = `${at}.values`;
  if (!Array.isArray(values) || !values.every((v) => typeof v === 'string')) {
    throw invalidArgument(`${where} must be a list of strings`, where);
  }
  const count = (n: number) => {
    if (values.length !== n) {
      throw invalidArgument(
        `${where}: ${op} takes ${n} value${n === 1 ? '' : 's'}, got ${values.length}`,
        where,
      );
    }
  };
  switch (op) {
    case 'IN':
    case 'NOT_IN': {
      if (values.length === 0) throw invalidArgument(`${where}: ${op} takes at least one value`, where);
      const numbers = new Set<number>();
      const booleans = new Set<boolean>();
      for (const v of values) {
        const n = v.trim() === '' ? Number.NaN : Number(v);
        if (Number.isFinite(n)) numbers.add(n === 0 ? 0 : n);
        if (v === 'true' || v === 'false') booleans.add(v === 'true');
      }
      return { kind: 'match', field, negate: op === 'NOT_IN', strings: new Set(values), numbers, booleans };
    }
    case 'EXISTS':
    case 'NOT_EXISTS':
      // vss.proto: values are ignored.
      return { kind: 'exists', field, negate: op === 'NOT_EXISTS' };
    case 'LT':
    case 'LTE':
      count(1);
      return {
        kind: 'range',
        field,
        low: Number.NEGATIVE_INFINITY,
        lowInclusive: true,
        high: parseNumber(values[0]!, `${where}[0]`),
        highInclusive: op === 'LTE',
      };
    case 'GT':
    case 'GTE':
      count(1);
      return {
        kind: 'range',
        field,
        low: parseNumber(values[0]!, `${where}[0]`),
        lowInclusive: op === 'GTE',
        high: Number.POSITIVE_INFINITY,
        highInclusive: true,
      };
    case 'BETWEEN':
    case 'BETWEEN_INCLUSIVE': {
      count(2);
      const low = parseNumber(values[0]!, `${where}[0]`);
      const high = parseNumber(values[1]!, `${where}[1]`);
      if (low > high) throw invalidArgument(`${where}: low ${low} is above high ${high}`, where);
      const inclusive = op === 'BETWEEN_INCLUSIVE';
      return { kind: 'range', field, low, lowInclusive: inclusive, high, highInclusive: inclusive };
    }
  }
}

/**
 * Validates filters and compiles them. Errors are INVALID_ARGUMENT naming `<path>[i].field`,
 * `.op` or `.values`; `path` is where the filters sit in the request (`filters`,
 * `queries[2].filters`).
 */
export function compileFilters(filters: readonly Filter[] | undefined, path = 'filters'): CompiledFilter[] {
  if (filters === undefined) return [];
  if (!Array.isArray(filters)) throw invalidArgument(`${path} must be a list`, path);
  return filters.map((filter, i) => compileOne(filter, `${path}[${i}]`));
}

export function inRange(value: number, filter: Extract<CompiledFilter, { kind: 'range' }>): boolean {
  const aboveLow = filter.lowInclusive ? value >= filter.low : value > filter.low;
  const belowHigh = filter.highInclusive ? value <= filter.high : value < filter.high;
  return aboveLow && belowHigh;
}

function scalarMatches(value: string | number | boolean, filter: Extract<CompiledFilter, { kind: 'match' }>) {
  if (typeof value === 'string') return filter.strings.has(value);
  if (typeof value === 'number') return filter.numbers.has(value);
  return filter.booleans.has(value);
}

function present(value: PayloadValue | undefined): value is PayloadValue {
  return value !== undefined && !(Array.isArray(value) && value.length === 0);
}

/** Whether a payload satisfies one compiled filter. */
export function matchesFilter(payload: Payload, filter: CompiledFilter): boolean {
  const value = Object.hasOwn(payload, filter.field) ? payload[filter.field] : undefined;
  switch (filter.kind) {
    case 'exists':
      return present(value) !== filter.negate;
    case 'match': {
      let hit = false;
      if (Array.isArray(value)) hit = value.some((element) => scalarMatches(element, filter));
      else if (value !== undefined) hit = scalarMatches(value, filter);
      return hit !== filter.negate;
    }
    case 'range':
      return typeof value === 'number' && inRange(value, filter);
  }
}

/** Whether a payload satisfies every filter (AND). */
export function matchesAll(payload: Payload, filters: readonly CompiledFilter[]): boolean {
  for (const filter of filters) if (!matchesFilter(payload, filter)) return false;
  return true;
}

export function isFilterOp(value: unknown): value is FilterOp {
  return typeof value === 'string' && (FILTER_OPS as readonly string[]).includes(value);
}
