/**
 * Bugs the fuzz found that are not fixed yet (issue 13). Each gets a todo test in
 * services-fuzz.test.ts reproducing it, and an entry here so the fuzz counts its wrong answers apart
 * while everything else stays checked. Remove an entry once its fix lands (and drop the todo).
 *
 * Fixed so far, now plain regression tests in services-fuzz.test.ts: a NUL byte in a vss entity,
 * model name or candidate id reached SQL (SQLSTATE 22021); a vss candidate id over 1024 characters
 * named the vector DB's parameter ("ids[i]") instead of the request's field.
 */
import type { KnownIssue } from './fuzz-runner.js';

export const KNOWN_ISSUES: readonly KnownIssue[] = [];
