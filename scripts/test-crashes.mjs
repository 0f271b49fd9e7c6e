// Reads a Node test runner TAP report (scripts/run-tests.mjs writes one beside its spec output) for
// the test files whose process died by a signal. The runner reports such a file as one failed test
// located at the file's 1:1, with the signal in its YAML block (Node 20 and 24 alike).

/** How many tests the report counts as failed, and each crashed file with its signal. */
export function crashesOf(tap) {
  const failed = Number(/^# fail (\d+)$/m.exec(tap)?.[1] ?? Number.NaN);
  const crashed = [];
  const entry = /^not ok \d+ - .*\n {2}---\n([\s\S]*?)\n {2}\.\.\.$/gm;
  for (const match of tap.matchAll(entry)) {
    const yaml = match[1];
    const signal = /^ {2}signal: '([A-Z0-9]+)'$/m.exec(yaml)?.[1];
    const file = /^ {2}location: '(.*):1:1'$/m.exec(yaml)?.[1];
    if (signal !== undefined && file !== undefined) crashed.push({ file, signal });
  }
  return { failed, crashed };
}
