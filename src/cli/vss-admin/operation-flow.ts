/**
 * After the API accepted an operation (or for `status`): optionally wait for it with a progress
 * display, and turn its outcome into the exit status — 0 SUCCEEDED, 1 FAILED (with its last error),
 * 130 when the user stopped waiting (the operation runs on; the message says how to watch it again).
 */
import { type CommandContext, printJson, printLine } from './command-context.js';
import { describeOperation, type OperationView } from './operation-view.js';
import { ProgressRenderer } from './progress.js';
import { watchOperation } from './watch-operation.js';

/** Exit status when the user interrupted the wait (128 + SIGINT, as shells report it). */
export const EXIT_INTERRUPTED = 130;

/** Whether to wait: `--wait` / `--no-wait`, else the subcommand's default. */
export function shouldWait(context: CommandContext, waitByDefault: boolean): boolean {
  const wait = context.flags.get('wait');
  return typeof wait === 'boolean' ? wait : waitByDefault;
}

/**
 * An accepted operation: its summary (or the JSON answer when not waiting), then the wait when asked.
 * `summary` is the human text of the accepted answer; `replayed`, that the API answered what it
 * recorded earlier under the request's Idempotency-Key (the answer's own `created` describes the
 * operation, not this request).
 */
export async function followAccepted(
  context: CommandContext,
  accepted: { answer: unknown; replayed: boolean },
  operation: OperationView,
  text: string,
  wait: boolean,
): Promise<number> {
  const { stdout } = context.io;
  let summary = text;
  if (accepted.replayed)
    summary += '\n(Recorded earlier under this Idempotency-Key: nothing new was started.)';
  if (!wait) {
    if (context.json) printJson(stdout, accepted.answer);
    else {
      printLine(stdout, summary);
      printLine(stdout, `Watch it with: lattice vss status ${operation.operationId} --wait`);
    }
    return 0;
  }
  if (!context.json) printLine(stdout, summary);
  return waitForOperation(context, operation.operationId);
}

/**
 * Polls the operation to its end with a progress display (on stderr under `--json`, so stdout holds
 * one JSON document: the final operation).
 */
export async function waitForOperation(context: CommandContext, operationId: string): Promise<number> {
  const { stdout, stderr } = context.io;
  const renderer = new ProgressRenderer(context.json ? stderr : stdout, {
    ...(context.io.plainProgressIntervalMs === undefined
      ? {}
      : { intervalMs: context.io.plainProgressIntervalMs }),
  });
  const interrupt = new AbortController();
  const unsubscribe = context.io.onInterrupt(() => interrupt.abort());
  let outcome: Awaited<ReturnType<typeof watchOperation>>;
  try {
    outcome = await watchOperation(context.client, operationId, {
      signal: interrupt.signal,
      onUpdate: (operation) => renderer.update(operation),
      ...(context.io.pollIntervalMs === undefined ? {} : { pollIntervalMs: context.io.pollIntervalMs }),
    });
  } finally {
    unsubscribe();
    renderer.finish();
  }
  if (outcome.kind === 'interrupted') {
    printLine(
      stderr,
      `Stopped waiting; operation ${operationId} keeps running. Watch it again with: lattice vss status ${operationId} --wait`,
    );
    return EXIT_INTERRUPTED;
  }
  const { operation, body } = outcome;
  if (context.json) printJson(stdout, body);
  if (operation.status === 'SUCCEEDED') {
    if (!context.json) printLine(stdout, describeOperation(operation));
    return 0;
  }
  printLine(stderr, `lattice: ${failureText(operation)}`);
  printLine(stderr, `Retry it from the failed step with: lattice vss retry ${operationId}`);
  return 1;
}

/** `operation X (RESET_MODEL) FAILED at INGESTING: <last error>` */
export function failureText(operation: OperationView): string {
  return `${describeOperation(operation)}: ${operation.lastError ?? 'no error recorded'}`;
}
