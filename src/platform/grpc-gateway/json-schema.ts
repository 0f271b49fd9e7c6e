/**
 * JSON Schemas of messages in the proto3 JSON mapping, with the proto comments as descriptions: what
 * the HTTP/JSON routes declare, so the ops server's OpenAPI document describes their bodies and
 * answers. They document; the gateway does not validate with them (the mapping's reader and the gRPC
 * server do, as for a gRPC call).
 */
import {
  type DescEnum,
  type DescField,
  type DescMessage,
  type DescMethod,
  ScalarType,
} from '@bufbuild/protobuf';

export type JsonSchema = Record<string, unknown>;

/** The leading comment of a declaration, from its file's source info (buf keeps it). */
function commentAt(file: DescMessage['file'], path: readonly number[]): string | undefined {
  const key = path.join(',');
  const location = file.proto.sourceCodeInfo?.location.find((l) => l.path.join(',') === key);
  const text = location?.leadingComments?.trim();
  return text ? text.replace(/\n /g, '\n') : undefined;
}

/** The source-info path of a message: [4, i] at the top of its file, then [3, j] per nesting. */
function messagePath(desc: DescMessage): number[] {
  if (desc.parent === undefined) return [4, desc.file.messages.indexOf(desc)];
  return [...messagePath(desc.parent), 3, desc.parent.nestedMessages.indexOf(desc)];
}

/** A method's comment: [6, service, 2, method]. */
export function methodComment(method: DescMethod): string | undefined {
  const service = method.parent;
  return commentAt(service.file, [
    6,
    service.file.services.indexOf(service),
    2,
    service.methods.indexOf(method),
  ]);
}

function fieldComment(field: DescField): string | undefined {
  const message = field.parent;
  return commentAt(message.file, [...messagePath(message), 2, message.proto.field.indexOf(field.proto)]);
}

function scalarSchema(scalar: ScalarType): JsonSchema {
  switch (scalar) {
    case ScalarType.STRING:
      return { type: 'string' };
    case ScalarType.BOOL:
      return { type: 'boolean' };
    case ScalarType.BYTES:
      return { type: 'string', format: 'byte', description: 'base64' };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      // "NaN", "Infinity" and "-Infinity" are strings in the mapping.
      return { oneOf: [{ type: 'number' }, { type: 'string', enum: ['NaN', 'Infinity', '-Infinity'] }] };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      // Written as decimal strings (a JSON number loses precision past 2^53); read as either.
      return { type: 'string', format: 'int64' };
    default:
      return { type: 'integer', format: 'int32' };
  }
}

function enumSchema(desc: DescEnum): JsonSchema {
  return { type: 'string', enum: desc.values.map((v) => v.name) };
}

function valueSchema(
  kind: { scalar?: ScalarType; message?: DescMessage; enum?: DescEnum },
  open: ReadonlySet<string>,
) {
  if (kind.message) return messageSchema(kind.message, open);
  if (kind.enum) return enumSchema(kind.enum);
  return scalarSchema(kind.scalar ?? ScalarType.STRING);
}

function fieldSchema(field: DescField, open: ReadonlySet<string>): JsonSchema {
  let schema: JsonSchema;
  switch (field.fieldKind) {
    case 'scalar':
      schema = scalarSchema(field.scalar);
      break;
    case 'enum':
      schema = enumSchema(field.enum);
      break;
    case 'message':
      schema = messageSchema(field.message, open);
      break;
    case 'list':
      schema = {
        type: 'array',
        items: valueSchema(
          field.listKind === 'message'
            ? { message: field.message }
            : field.listKind === 'enum'
              ? { enum: field.enum }
              : { scalar: field.scalar },
          open,
        ),
      };
      break;
    case 'map':
      schema = {
        type: 'object',
        additionalProperties: valueSchema(
          field.mapKind === 'message'
            ? { message: field.message }
            : field.mapKind === 'enum'
              ? { enum: field.enum }
              : { scalar: field.scalar },
          open,
        ),
      };
      break;
  }
  const comment = fieldComment(field);
  return comment ? { ...schema, description: comment } : schema;
}

/**
 * The schema of `desc` in the mapping: its fields by JSON name (readers take the proto name too). A
 * message inside itself is an open object at the second level, so the schema stays finite.
 */
export function messageSchema(desc: DescMessage, open: ReadonlySet<string> = new Set()): JsonSchema {
  const comment = commentAt(desc.file, messagePath(desc));
  const title = desc.typeName;
  if (open.has(desc.typeName)) return { type: 'object', title };
  const inner = new Set(open).add(desc.typeName);
  const properties: Record<string, JsonSchema> = {};
  for (const field of desc.fields) properties[field.jsonName] = fieldSchema(field, inner);
  return { type: 'object', title, ...(comment ? { description: comment } : {}), properties };
}
