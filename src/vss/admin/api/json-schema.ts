/**
 * The admin API's schemas are zod schemas; Fastify validates requests (with Ajv) and serializes
 * responses with JSON Schema, and @fastify/swagger builds the OpenAPI document from the same JSON
 * Schema, so zod's `z.toJSONSchema` turns each zod schema into the one Fastify is given. The output
 * is tidied to the plain form OpenAPI readers expect: `T | null` as `type: [T, 'null']`, an open
 * object as `additionalProperties: true`, no bounds that only restate JavaScript's safe integer
 * range, no `propertyNames` that only say keys are strings, no `$schema` (Fastify's Ajv and OpenAPI 3.1 take the dialect from their context).
 */
import { z } from 'zod';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `{ anyOf: [{ type: T, … }, { type: 'null' }] }` → `{ type: [T, 'null'], … }` (enum gains null). */
function mergeNull(schema: Json): Json {
  const branches = schema.anyOf;
  if (!Array.isArray(branches) || branches.length !== 2) return schema;
  const [value, nothing] = branches as unknown[];
  if (!isObject(value) || !isObject(nothing) || nothing.type !== 'null' || Object.keys(nothing).length !== 1)
    return schema;
  if (typeof value.type !== 'string') return schema;
  const { anyOf: _anyOf, ...outer } = schema;
  const merged: Json = { ...value, ...outer, type: [value.type, 'null'] };
  if (Array.isArray(value.enum)) merged.enum = [...value.enum, null];
  return merged;
}

function tidy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(tidy);
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === '$schema') continue;
    if (key === 'minimum' && child === Number.MIN_SAFE_INTEGER) continue;
    if (key === 'maximum' && child === Number.MAX_SAFE_INTEGER) continue;
    if (
      key === 'propertyNames' &&
      isObject(child) &&
      child.type === 'string' &&
      Object.keys(child).length === 1
    )
      continue;
    out[key] = tidy(child);
  }
  // An open object (z.looseObject({})): any properties.
  const open = out.additionalProperties;
  if (isObject(open) && Object.keys(open).length === 0) {
    out.additionalProperties = true;
    if (isObject(out.properties) && Object.keys(out.properties).length === 0) delete out.properties;
  }
  return mergeNull(out);
}

/**
 * A request schema: what a client may send (`input`: a field with a default is optional, and Ajv
 * fills the default in, as the schema's `default` says).
 */
export function requestJsonSchema(schema: z.ZodType): Json {
  return tidy(z.toJSONSchema(schema, { io: 'input', target: 'draft-7' })) as Json;
}

/**
 * Response shapes shared by name: each becomes a JSON Schema with `$id` set to its name, and a shape
 * inside another is referenced as `{ $ref: '<name>#' }` (Fastify resolves it by `$id`, and the
 * OpenAPI document lists it under `components.schemas`).
 */
export function sharedJsonSchemas(shapes: Readonly<Record<string, z.ZodType>>): Json[] {
  const registry = z.registry<{ id: string }>();
  for (const [id, shape] of Object.entries(shapes)) registry.add(shape, { id });
  const { schemas } = z.toJSONSchema(registry, { io: 'output', target: 'draft-7', uri: (id) => `${id}#` });
  return Object.entries(shapes).map(([id]) => {
    const { $id: _uri, ...schema } = tidy(schemas[id]) as Json;
    return { $id: id, ...schema };
  });
}
