/**
 * The proto3 JSON mapping (https://protobuf.dev/programming-guides/json/) between a request's JSON
 * and the protobuf binary the gRPC servers read, and back for their answers: @bufbuild/protobuf's
 * conformant reader and writer, driven by the descriptors of proto/ (a FileDescriptorSet that
 * scripts/gen-proto.mjs builds with buf). The generated ts-proto code has no JSON methods
 * (outputJsonMethods=false), and its own would not be the standard mapping.
 */
import {
  createFileRegistry,
  type DescMessage,
  type FileRegistry,
  fromBinary,
  fromJson,
  type JsonValue,
  toBinary,
  toJson,
} from '@bufbuild/protobuf';
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import { LatticeError } from '../errors.js';

/** The registry of a FileDescriptorSet given as base64 (src/gen/descriptor-set.ts). */
export function descriptorRegistry(base64: string): FileRegistry {
  return createFileRegistry(fromBinary(FileDescriptorSetSchema, Buffer.from(base64, 'base64')));
}

/**
 * The binary form of `json` (a parsed JSON body) as a `desc` message. Anything the mapping refuses
 * (a wrong type, an unknown field, a bad base64 or number) is INVALID_ARGUMENT at its path.
 * An absent body is the empty message, as an empty gRPC request is.
 */
export function jsonToBinary(desc: DescMessage, json: unknown): Uint8Array {
  try {
    return toBinary(desc, fromJson(desc, (json ?? {}) as JsonValue));
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new LatticeError(
      'INVALID_ARGUMENT',
      `the body is not ${desc.typeName} in the proto3 JSON mapping: ${message}`,
      { field: refusedPath(desc, json ?? {}, '') },
    );
  }
}

/**
 * The JSON of a binary `desc` message. Fields at their default are written too (the mapping's
 * "emit implicit fields" option, grpc-gateway's default): a score of 0 or an empty error shows as
 * such, and every answer of one method has the same shape.
 */
export function binaryToJson(desc: DescMessage, bytes: Uint8Array): JsonValue {
  return toJson(desc, fromBinary(desc, bytes), { alwaysEmitImplicit: true });
}

/** Whether the mapping reads `value` as field `key` of `desc` on its own. */
function readsAlone(desc: DescMessage, key: string, value: unknown): boolean {
  try {
    fromJson(desc, { [key]: value } as JsonValue);
    return true;
  } catch {
    return false;
  }
}

/**
 * Where in `json` the mapping refuses it, named as the services name fields in their errors (proto
 * names, `[i]` for a list element: `targets[1].feature_values[0]`): each field is read alone, and
 * inside the message or list that fails. Undefined when every field reads alone (a oneof set twice).
 */
function refusedPath(desc: DescMessage, json: unknown, path: string): string | undefined {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return path || undefined;
  for (const [key, value] of Object.entries(json)) {
    const field = desc.fields.find((f) => f.jsonName === key || f.name === key);
    const at = path === '' ? (field?.name ?? key) : `${path}.${field?.name ?? key}`;
    if (field === undefined) return at;
    if (readsAlone(desc, key, value)) continue;
    if (field.fieldKind === 'message' && value !== null && typeof value === 'object') {
      return refusedPath(field.message, value, at) ?? at;
    }
    if (field.fieldKind === 'list' && Array.isArray(value)) {
      const i = value.findIndex((item) => !readsAlone(desc, key, [item]));
      if (i < 0) return at;
      const item: unknown = value[i];
      if (field.listKind === 'message' && item !== null && typeof item === 'object') {
        return refusedPath(field.message, item, `${at}[${i}]`) ?? `${at}[${i}]`;
      }
      return `${at}[${i}]`;
    }
    return at;
  }
  return undefined;
}
