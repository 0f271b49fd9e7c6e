/**
 * What a reset that ingested `rows` events exactly once reports on its operation (GET
 * /operations/…): one attempt, no error, every event applied and written once, the training-data
 * job done with every row published and none bad. The crash and scale-out tests kill processes mid
 * reset and then hold the operation to this.
 */
import assert from 'node:assert/strict';

export function assertResetIngestedOnce(operation: Record<string, unknown>, rows: number): void {
  assert.equal(operation.attempts, 1, 'no retry');
  assert.equal(operation.last_error, null);
  assert.deepEqual((operation.result as { ingestion: unknown }).ingestion, {
    events: rows,
    applied: rows,
    rejected: 0,
    points_written: rows,
  });
  const job = (operation.result as { job: { state: string; rows_published: number; bad_row_count: number } })
    .job;
  assert.deepEqual([job.state, job.rows_published, job.bad_row_count], ['SUCCEEDED', rows, 0]);
}
