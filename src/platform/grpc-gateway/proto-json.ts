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
 * (a wrong type, an unknown field, a bad base64 or number) is INVALID_ARGUMENT at the field named.
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
      {
        field: fieldOf(desc, message),
      },
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

/**
 * The field a refusal of the mapping names: the request's own field by its proto name, a nested
 * message's as `Message.field` (the reader does not say where in the tree it was).
 */
function fieldOf(desc: DescMessage, message: string): string | undefined {
  const field = /cannot decode field ([\w.]+)\.(\w+) from JSON/.exec(message);
  if (field) return field[1] === desc.typeName ? field[2] : `${field[1]!.split('.').pop()}.${field[2]}`;
  const key = /cannot decode message ([\w.]+) from JSON: key "([^"]*)" is unknown/.exec(message);
  if (key) return key[1] === desc.typeName ? key[2] : `${key[1]!.split('.').pop()}.${key[2]}`;
  return undefined;
}
