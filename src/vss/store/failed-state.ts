/**
 * Models and variants fail the same way: FAILED remembers the state it failed in (`failed_state`),
 * and a retry puts the row back there. Both repositories hand in their own compare-and-set.
 */
type CompareAndSetRow = (
  expect: Record<string, string>,
  set: Record<string, string | null>,
) => Promise<boolean>;

/** Marks the row FAILED, remembering `from`; false when it is no longer in `from`. */
export function failFrom(cas: CompareAndSetRow, from: string, reason: string): Promise<boolean> {
  return cas({ state: from }, { state: 'FAILED', failed_state: from, failure_reason: reason });
}

/** Puts a FAILED row back in the state it failed in; that state, or undefined when it is not FAILED. */
export async function retryFailed<S extends string>(
  row: { state: S | 'FAILED'; failedState: S | null },
  cas: CompareAndSetRow,
): Promise<S | undefined> {
  if (row.state !== 'FAILED' || row.failedState === null) return undefined;
  const resumed = row.failedState;
  const applied = await cas(
    { state: 'FAILED', failed_state: resumed },
    { state: resumed, failed_state: null, failure_reason: null },
  );
  return applied ? resumed : undefined;
}
