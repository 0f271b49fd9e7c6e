/**
 * Bugs the fuzz found that are not fixed yet (issue 13). Each has a todo test in
 * services-fuzz.test.ts reproducing it; the fuzz counts its wrong answers apart so that everything
 * else stays checked. Remove an entry once its fix lands (the todo test then passes: drop its todo).
 */
import type { KnownIssue } from './fuzz-runner.js';

export const VSS_NUL_REACHES_SQL =
  'issue 13: a NUL byte in a vss entity, model name or candidate id reaches SQL and is answered INVALID_ARGUMENT naming no field (SQLSTATE 22021) instead of NOT_FOUND / a per-id not-found';
export const VSS_LONG_ID_FIELD =
  'issue 13: a vss candidate id over 1024 characters is INVALID_ARGUMENT naming "ids[i]" (the vector DB\'s parameter) instead of candidate_ids[i] / queries[i].candidate_id';

export const KNOWN_ISSUES: readonly KnownIssue[] = [
  { issue: VSS_NUL_REACHES_SQL, matches: (wrong) => wrong.includes('SQLSTATE 22021') },
  { issue: VSS_LONG_ID_FIELD, matches: (wrong) => /naming "ids\[\d+\]"/.test(wrong) },
];
