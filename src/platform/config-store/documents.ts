import { parseDocument as parseYamlDocument } from 'yaml';
import { invalidArgument } from '../errors.js';

/**
 * Config values are JSON documents. These helpers turn stored text into values and back, and describe
 * a malformed document with the position of the first error, so a user can find it in the file.
 */
export type DocumentFormat = 'json' | 'yaml';

export type ParsedDocument = { ok: true; value: unknown } | { ok: false; reason: string };

export function parseDocument(text: string, format: DocumentFormat): ParsedDocument {
  const source = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  return format === 'json' ? parseJson(source) : parseYaml(source);
}

/** The document text stored for `value`; throws INVALID_ARGUMENT when `value` is not JSON. */
export function serializeDocument(key: string, value: unknown, pretty: boolean): string {
  const problem = jsonProblem(value, '$', new Set());
  if (problem !== undefined) {
    throw invalidArgument(
      `config value for ${JSON.stringify(key)} is not a JSON document: ${problem}`,
      'value',
    );
  }
  return pretty ? `${JSON.stringify(value, null, 2)}\n` : JSON.stringify(value);
}

function parseJson(text: string): ParsedDocument {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    const located = locateJsonError(text);
    if (located === undefined) return { ok: false, reason: `invalid JSON: ${(err as Error).message}` };
    const { line, column } = lineAndColumn(text, located.offset);
    return { ok: false, reason: `invalid JSON at line ${line}, column ${column}: ${located.message}` };
  }
}

function parseYaml(text: string): ParsedDocument {
  const doc = parseYamlDocument(text, { prettyErrors: true, uniqueKeys: true });
  const [error] = doc.errors;
  if (error !== undefined) {
    const firstLine = error.message.split('\n')[0] ?? error.message;
    return { ok: false, reason: `invalid YAML: ${firstLine.replace(/:$/, '')}` };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 1000 });
  } catch (err) {
    return { ok: false, reason: `invalid YAML: ${(err as Error).message}` };
  }
  const problem = jsonProblem(value, '$', new Set());
  if (problem !== undefined) return { ok: false, reason: `YAML value is not a JSON document: ${problem}` };
  return { ok: true, value };
}

/** Why `value` cannot be stored as JSON without loss, or undefined when it can. */
function jsonProblem(value: unknown, path: string, seen: Set<object>): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : `${path} is ${value}, which JSON cannot represent`;
    case 'object': {
      if (value === null) return undefined;
      if (seen.has(value)) return `${path} refers back to itself`;
      const proto: unknown = Object.getPrototypeOf(value);
      if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) {
        return `${path} is a ${value.constructor?.name ?? 'non-plain object'}, not a plain object or array`;
      }
      seen.add(value);
      const entries = Array.isArray(value)
        ? value.map((item, i) => [`${path}[${i}]`, item] as const)
        : Object.entries(value).map(([k, item]) => [`${path}.${k}`, item] as const);
      for (const [itemPath, item] of entries) {
        const problem = jsonProblem(item, itemPath, seen);
        if (problem !== undefined) return problem;
      }
      seen.delete(value);
      return undefined;
    }
    default:
      return `${path} is ${value === undefined ? 'undefined' : `a ${typeof value}`}`;
  }
}

export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

class JsonSyntaxError {
  constructor(
    readonly offset: number,
    readonly message: string,
  ) {}
}

/**
 * Finds the first syntax error in `text` (RFC 8259), because V8's JSON.parse messages do not always
 * say where it is ("Unexpected token 'o', "not json" is not valid JSON"). Only runs on text that
 * JSON.parse already rejected.
 */
export function locateJsonError(text: string): { offset: number; message: string } | undefined {
  let i = 0;
  const fail = (message: string): never => {
    throw new JsonSyntaxError(i, message);
  };
  const unexpected = (): never =>
    fail(i >= text.length ? 'unexpected end of input' : `unexpected ${describeAt(text, i)}`);
  const skipSpace = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] ?? '')) i++;
  };
  const expect = (char: string, what: string) => {
    skipSpace();
    if (text[i] !== char) fail(`expected ${what} but found ${describeAt(text, i)}`);
    i++;
  };
  const literal = (word: string) => {
    if (!text.startsWith(word, i)) unexpected();
    i += word.length;
  };
  const string = () => {
    i++; // opening quote
    for (;;) {
      const char = text[i];
      if (char === undefined) {
        fail('unterminated string');
        return;
      }
      if (char === '"') {
        i++;
        return;
      }
      if (char === '\\') {
        i++;
        const escaped = text[i];
        if (escaped === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) fail('invalid \\u escape in string');
          i += 5;
        } else if (escaped !== undefined && '"\\/bfnrt'.includes(escaped)) {
          i++;
        } else {
          fail('invalid escape in string');
        }
      } else if ((char.codePointAt(0) ?? 0) < 0x20) {
        fail('control character in string (escape it)');
      } else {
        i++;
      }
    }
  };
  const number = () => {
    const match = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 400));
    if (match === null || match[0] === '' || match[0] === '-') unexpected();
    i += match?.[0].length ?? 0;
  };
  const value = (depth: number): void => {
    if (depth > 10_000) fail('nesting too deep');
    skipSpace();
    const char = text[i];
    if (char === '{') {
      i++;
      skipSpace();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        skipSpace();
        if (text[i] !== '"') fail(`expected a double-quoted property name but found ${describeAt(text, i)}`);
        string();
        expect(':', "':' after the property name");
        value(depth + 1);
        skipSpace();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return;
        }
        fail(`expected ',' or '}' after the property value but found ${describeAt(text, i)}`);
      }
    }
    if (char === '[') {
      i++;
      skipSpace();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value(depth + 1);
        skipSpace();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return;
        }
        fail(`expected ',' or ']' after the array element but found ${describeAt(text, i)}`);
      }
    }
    if (char === '"') string();
    else if (char === 't') literal('true');
    else if (char === 'f') literal('false');
    else if (char === 'n') literal('null');
    else if (char === '-' || (char !== undefined && char >= '0' && char <= '9')) number();
    else unexpected();
  };
  try {
    value(0);
    skipSpace();
    if (i < text.length) fail(`unexpected ${describeAt(text, i)} after the document`);
    return undefined;
  } catch (err) {
    if (err instanceof JsonSyntaxError) return { offset: err.offset, message: err.message };
    return undefined; // e.g. a stack overflow on absurd nesting: the caller falls back to V8's message
  }
}

/** The token at `offset` as a user would name it: a whole word (`tru`, `None`) or one character. */
function describeAt(text: string, offset: number): string {
  const char = text[offset];
  if (char === undefined) return 'the end of input';
  const word = /^[A-Za-z0-9_$]+/.exec(text.slice(offset, offset + 40))?.[0];
  return JSON.stringify(word ?? char);
}
