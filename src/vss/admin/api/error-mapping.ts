/**
 * The one place the admin API turns anything thrown into its error answer,
 * `{ "error": { "code", "message", "field" } }`: LatticeErrors by their code (platform/http/status.ts),
 * Fastify's own request errors (schema validation, malformed JSON, wrong content type, body too large)
 * as 400 / 413 naming the field, and anything else as a generic 5xx whose cause is only logged.
 * Messages echo at most a short, quoted prefix of client input (platform/quote.ts).
 */
import type { FastifyError } from 'fastify';
import { isLatticeError, type LatticeError } from '../../../platform/errors.js';
import { boundedText } from '../../../platform/grpc/index.js';
import { httpStatusOf } from '../../../platform/http/index.js';
import { QUOTE_PREFIX, quote } from '../../../platform/quote.js';

export interface ErrorBody {
  error: { code: string; message: string; field?: string };
}

export interface ErrorAnswer {
  status: number;
  body: ErrorBody;
  /** A fault of the service, not of the request: log it with its cause. */
  unexpected: boolean;
}

/** The longest message sent; the rest is cut (the gRPC side uses the same bound). */
const MAX_MESSAGE = 1024;
/** The longest `field` sent (a path may name a client's own key). */
const MAX_FIELD = 256;

/** What a 5xx tells the client; the cause goes to the log only. */
const genericMessages: Record<string, string> = {
  UNAVAILABLE: 'a dependency of the admin service is unavailable: try again later',
  DEADLINE_EXCEEDED: 'the request took too long: try again later',
};

function answer(status: number, code: string, message: string, field?: string): ErrorAnswer {
  const error: ErrorBody['error'] = { code, message: boundedText(message, MAX_MESSAGE) };
  if (field !== undefined && field !== '') error.field = boundedText(field, MAX_FIELD);
  return { status, body: { error }, unexpected: false };
}

/** Turns anything a route, hook or Fastify threw into the answer the client sees. */
export function toErrorAnswer(err: unknown): ErrorAnswer {
  if (isLatticeError(err)) return latticeAnswer(err);
  const fastify = err as Partial<FastifyError> & { validationContext?: string };
  if (Array.isArray(fastify.validation)) {
    return validationAnswer(fastify.validation, fastify.validationContext ?? 'body');
  }
  switch (fastify.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return answer(400, 'INVALID_ARGUMENT', 'Content-Type must be application/json', 'Content-Type');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return answer(400, 'INVALID_ARGUMENT', 'body is empty: send a JSON object', 'body');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return answer(400, 'INVALID_ARGUMENT', 'body is not valid JSON', 'body');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return answer(400, 'INVALID_ARGUMENT', 'Content-Length does not match the body', 'Content-Length');
    case 'FST_ERR_BAD_URL':
      return answer(400, 'INVALID_ARGUMENT', 'the path is not valid URL encoding', 'path');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return answer(400, 'INVALID_ARGUMENT', 'a path segment is too long', 'path');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return answer(413, 'RESOURCE_EXHAUSTED', 'body is larger than the admin API accepts', 'body');
    default:
      break;
  }
  const status = fastify.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const code = status === 404 ? 'NOT_FOUND' : status === 413 ? 'RESOURCE_EXHAUSTED' : 'INVALID_ARGUMENT';
    return answer(status === 415 ? 400 : status, code, String(fastify.message ?? 'bad request'));
  }
  return {
    status: 500,
    body: { error: { code: 'INTERNAL', message: 'internal error' } },
    unexpected: true,
  };
}

function latticeAnswer(err: LatticeError): ErrorAnswer {
  const status = httpStatusOf[err.code];
  if (status >= 500) {
    const message = genericMessages[err.code] ?? 'internal error';
    return { status, body: { error: { code: err.code, message } }, unexpected: true };
  }
  // The operations store names the lifecycle's key field; the client knows it as the header.
  const field = err.field === 'idempotency_key' ? 'Idempotency-Key' : err.field;
  return answer(status, err.code, err.message, field);
}

interface ValidationIssue {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** A JSON pointer's segments (`/a/0/b~1c` → a, 0, b/c). */
function segments(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** `vss_filter.criteria[0].column_name`; a client's long key is cut. */
function fieldPath(parts: readonly string[]): string {
  let path = '';
  for (const part of parts) {
    if (/^\d+$/.test(part)) path += `[${part}]`;
    else {
      const name = part.length > QUOTE_PREFIX ? `${part.slice(0, QUOTE_PREFIX)}…` : part;
      path += path === '' ? name : `.${name}`;
    }
  }
  return path;
}

/** The path an issue is about: a missing or unknown property names the property itself. */
function issuePath(issue: ValidationIssue): string[] {
  const parts = segments(issue.instancePath ?? '');
  const property = issue.params?.missingProperty ?? issue.params?.additionalProperty;
  return typeof property === 'string' ? [...parts, property] : parts;
}

/**
 * Ajv reports each failed branch of a `oneOf` (a JSON-holding field: string or object): the deepest
 * issue is the one inside the object the client meant, so it is the one named.
 */
function validationAnswer(issues: readonly ValidationIssue[], context: string): ErrorAnswer {
  let chosen = issues[0];
  let chosenPath = chosen === undefined ? [] : issuePath(chosen);
  for (const issue of issues) {
    const path = issuePath(issue);
    if (path.length > chosenPath.length) {
      chosen = issue;
      chosenPath = path;
    }
  }
  const where = context === 'body' ? 'body' : context;
  const field = chosenPath.length === 0 ? where : fieldPath(chosenPath);
  if (chosen === undefined) return answer(400, 'INVALID_ARGUMENT', `${field} is invalid`, field);
  const eitherForm = issues.some(
    (issue) => issue.keyword === 'oneOf' && (issue.instancePath ?? '') === (chosen.instancePath ?? ''),
  );
  return answer(400, 'INVALID_ARGUMENT', `${field} ${describeIssue(chosen, eitherForm)}`, field);
}

function describeIssue(issue: ValidationIssue, eitherForm: boolean): string {
  const params = issue.params ?? {};
  switch (issue.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return `is not a field of this request (got ${quote(String(params.additionalProperty))})`;
    case 'enum':
      return `must be one of ${(params.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'type':
    case 'oneOf':
      if (eitherForm) return 'must be an object or a JSON string holding one';
      return issue.message ?? 'has the wrong type';
    default:
      return issue.message ?? 'is invalid';
  }
}
