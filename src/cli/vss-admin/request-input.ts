/**
 * A request body from a JSON or YAML file and flags (vss.md "Admin HTTP API" field names, as
 * kebab-case flags). The file is taken as written, so fields the CLI has no flag for still reach the
 * API; flags override the file's fields. The API validates the body: the CLI only gives each flag
 * its field's JSON type (integers and enum values are checked while the command line is parsed), so
 * a mistake there is caught before anything is sent.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { UsageError } from '../command-kit.js';

/**
 * How a flag's text becomes a field value. `json`: the API's JSON-holding fields, given as JSON text
 * or `@file` (JSON or YAML) and sent as the object (vss.md: the API takes a JSON string or an object).
 */
export type FieldKind = 'string' | 'integer' | 'number' | 'boolean' | 'json';

export interface BodyField {
  /** The API's snake_case field. */
  field: string;
  /** The kebab-case flag that sets it. */
  flag: string;
  kind: FieldKind;
  /** Other flags that set it too (`--model` for `model_name`). */
  aliases?: readonly string[];
  /** The values a string field takes (the API's enum): the flag refuses any other while parsing. */
  choices?: readonly string[];
}

export type JsonBody = Record<string, unknown>;

/** The flags of `fields`, with the flag type the parser needs. */
export function bodyFlags(fields: readonly BodyField[]): [string, 'string' | 'boolean'][] {
  return fields.flatMap((f) => {
    const type = f.kind === 'boolean' ? 'boolean' : 'string';
    return [f.flag, ...(f.aliases ?? [])].map((flag): [string, 'string' | 'boolean'] => [flag, type]);
  });
}

/** The body: the file's fields (when `file` is given), then each flag given over them. */
export async function buildRequestBody(
  fields: readonly BodyField[],
  flags: ReadonlyMap<string, string | boolean | number>,
  file: string | undefined,
): Promise<JsonBody> {
  const body: JsonBody = file === undefined ? {} : await readBodyFile(file);
  for (const field of fields) {
    for (const flag of [field.flag, ...(field.aliases ?? [])]) {
      const value = flags.get(flag);
      if (value !== undefined) body[field.field] = await fieldValue(field, flag, value);
    }
  }
  return body;
}

async function readBodyFile(path: string): Promise<JsonBody> {
  const value = await readStructuredFile(path, '--file');
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new UsageError(`--file ${path} must hold one JSON or YAML object of request fields`);
  }
  return value as JsonBody;
}

async function fieldValue(
  field: BodyField,
  flag: string,
  value: string | boolean | number,
): Promise<unknown> {
  switch (field.kind) {
    case 'boolean':
    case 'integer': // a number already: the parser checked it
    case 'number':
      return value;
    case 'json': {
      const text = String(value);
      if (text.startsWith('@')) return readStructuredFile(text.slice(1), `--${flag}`);
      try {
        return JSON.parse(text) as unknown;
      } catch (err) {
        throw new UsageError(
          `--${flag} must be JSON text or @file, got ${JSON.stringify(text)}: ${(err as Error).message}`,
        );
      }
    }
    case 'string':
      return String(value);
  }
}

/** A JSON file, or YAML for `.yaml` / `.yml` (any other name is read as YAML too, which includes JSON). */
async function readStructuredFile(path: string, flag: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`${flag}: cannot read ${path}: ${(err as Error).message}`);
  }
  const json = extname(path).toLowerCase() === '.json';
  try {
    return json ? (JSON.parse(text) as unknown) : (parseYaml(text) as unknown);
  } catch (err) {
    throw new UsageError(
      `${flag}: ${path} is not valid ${json ? 'JSON' : 'YAML'}: ${(err as Error).message}`,
    );
  }
}
