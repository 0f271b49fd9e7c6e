/**
 * What each `lattice vss` admin subcommand does (subcommand-specs.ts declares its flags): the
 * request it sends and how its answer is shown.
 */

import { UsageError } from '../command-kit.js';
import type { AdminAnswer } from './admin-client.js';
import { type CommandContext, printJson, printLine, stringFlag } from './command-context.js';
import { followAccepted, shouldWait, waitForOperation } from './operation-flow.js';
import { bareOperation, describeOperation, type OperationView, readOperation } from './operation-view.js';
import { type BodyField, buildRequestBody, type JsonBody } from './request-input.js';
import {
  describeModel,
  describeReset,
  describeRollback,
  describeStore,
  describeVariant,
  modelsOf,
  modelsTable,
} from './resource-output.js';
import type { SubcommandName, SubcommandSpec } from './subcommand-specs.js';

/** POST with the request's Idempotency-Key; `body` undefined sends none (the retry route takes none). */
async function postBody(context: CommandContext, path: string, body: JsonBody | undefined): Promise<unknown> {
  return (await postAnswer(context, path, body)).body;
}

function postAnswer(context: CommandContext, path: string, body: JsonBody | undefined): Promise<AdminAnswer> {
  return context.client.postAnswer(path, body, { idempotencyKey: stringFlag(context, 'idempotency-key') });
}

async function requestBody(context: CommandContext, fields: readonly BodyField[]): Promise<JsonBody> {
  return buildRequestBody(fields, context.flags, stringFlag(context, 'file'));
}

function acceptedOperation(body: unknown, route: string): OperationView {
  const operation = readOperation(body);
  if (operation === undefined) {
    throw new Error(`the admin API accepted ${route} without an operation_id: ${JSON.stringify(body)}`);
  }
  return operation;
}

/** The run of a subcommand, given the spec it was declared with (its body fields). */
type Run = (context: CommandContext, spec: SubcommandSpec) => Promise<number>;

/** POST a registration and show the resource. */
function registration(route: string, describe: (body: unknown) => string): Run {
  return async (context, spec) => {
    const answer = await postBody(context, route, await requestBody(context, spec.fields));
    if (context.json) printJson(context.io.stdout, answer);
    else printLine(context.io.stdout, describe(answer));
    return 0;
  };
}

/** POST a request that runs as an operation, then follow it. */
function operationRequest(
  route: (body: JsonBody) => string,
  summary?: (answer: unknown, operation: OperationView) => string,
): Run {
  return async (context, spec) => {
    const body = await requestBody(context, spec.fields);
    const path = route(body);
    const { body: answer, replayed } = await postAnswer(context, path, body);
    const operation = acceptedOperation(answer, path);
    return followAccepted(
      context,
      { answer, replayed },
      operation,
      summary?.(answer, operation) ?? `Accepted: ${describeOperation(operation)}`,
      shouldWait(context, spec.waitByDefault ?? false),
    );
  };
}

export const SUBCOMMAND_RUNS: Readonly<Record<SubcommandName, Run>> = {
  'register-store': registration('/register-store', describeStore),
  'register-model': registration('/register-model', describeModel),
  async 'register-variant'(context, spec) {
    const { body: answer, replayed } = await postAnswer(
      context,
      '/register-variant',
      await requestBody(context, spec.fields),
    );
    // A variant added to a model with data is filled by an operation the answer names.
    const fillId = (answer as { fill_operation_id?: unknown } | null)?.fill_operation_id;
    if (typeof fillId !== 'string') {
      if (context.json) printJson(context.io.stdout, answer);
      else printLine(context.io.stdout, describeVariant(answer));
      return 0;
    }
    const operation = bareOperation(fillId);
    const summary = `${describeVariant(answer)}\nFilling it from the embedding store: ${describeOperation(operation)}`;
    return followAccepted(context, { answer, replayed }, operation, summary, shouldWait(context, false));
  },
  'update-variant': registration('/update-variant', (body) => describeVariant(body, 'updated')),
  reset: operationRequest(
    () => '/reset-model',
    (answer, operation) => describeReset(answer, operation.operationId),
  ),
  trigger: operationRequest(() => '/trigger-model-machine'),
  promote: operationRequest((body) => (body.variant === undefined ? '/promote-model' : '/promote-variant')),
  async rollback(context, spec) {
    const answer = await postBody(context, '/rollback-model', await requestBody(context, spec.fields));
    if (context.json) printJson(context.io.stdout, answer);
    else printLine(context.io.stdout, describeRollback(answer));
    return 0;
  },
  async retry(context) {
    const id = context.positionals[0]!;
    const path = `/operations/${encodeURIComponent(id)}/retry`;
    const { body: answer, replayed } = await postAnswer(context, path, undefined);
    const operation = acceptedOperation(answer, path);
    const summary = `Retry accepted: ${describeOperation(operation)}`;
    return followAccepted(context, { answer, replayed }, operation, summary, shouldWait(context, true));
  },
  async status(context) {
    const id = context.positionals[0]!;
    if (shouldWait(context, false)) return waitForOperation(context, id);
    const answer = await context.client.get(`/operations/${encodeURIComponent(id)}`);
    if (context.json) {
      printJson(context.io.stdout, answer);
      return 0;
    }
    const operation = acceptedOperation(answer, `GET /operations/${id}`);
    const { stdout } = context.io;
    printLine(stdout, describeOperation(operation));
    if (operation.rowsPublished !== undefined) {
      printLine(stdout, `  rows published: ${operation.rowsPublished.toLocaleString('en-US')}`);
    }
    if (operation.badRowCount !== undefined && operation.badRowCount > 0) {
      printLine(
        stdout,
        `  bad rows: ${operation.badRowCount.toLocaleString('en-US')} (the operation's result lists them: --json)`,
      );
    }
    if (operation.lastError !== undefined) printLine(stdout, `  last error: ${operation.lastError}`);
    return 0;
  },
  async models(context) {
    const entity = stringFlag(context, 'entity');
    const model = stringFlag(context, 'model') ?? stringFlag(context, 'model-name');
    if ((entity === undefined) !== (model === undefined)) {
      throw new UsageError('--entity and --model go together (one model), or neither (every model)');
    }
    const path =
      entity === undefined || model === undefined
        ? '/models'
        : `/models/${encodeURIComponent(entity)}/${encodeURIComponent(model)}`;
    const answer = await context.client.get(path);
    if (context.json) printJson(context.io.stdout, answer);
    else printLine(context.io.stdout, modelsTable(modelsOf(answer), entity !== undefined));
    return 0;
  },
};
