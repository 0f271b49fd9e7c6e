/**
 * The Prometheus alert rules under ops/prometheus: `promtool check rules` accepts them, `promtool
 * test rules` passes their unit tests, and those tests fire every alert and show every alert quiet
 * at least once. promtool comes from Debian's `prometheus` package (scripts/install-promtool.sh);
 * without it the tests are skipped with the reason printed, and fail on CI (env CI set).
 * That the rules and the test series use names the services really export is
 * vss-metrics-names.test.ts's job.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadRules, loadRuleTests, RULE_FILES, RULE_TEST_FILES, RULES_DIR } from './alert-rules.js';

function promtool(args: string[]): { status: number | null; output: string; missing: boolean } {
  const run = spawnSync('promtool', args, { encoding: 'utf8', timeout: 60_000 });
  const missing = (run.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
  return { status: run.status, output: `${run.stdout ?? ''}${run.stderr ?? ''}`, missing };
}

function promtoolSkip(): string | false {
  if (!promtool(['--version']).missing) return false;
  const reason = 'promtool is not on PATH (install it with scripts/install-promtool.sh)';
  if (process.env.CI) throw new Error(`${reason}; CI requires it`);
  console.log(`# skipping promtool tests: ${reason}`);
  return reason;
}

const skip = promtoolSkip();

describe('promtool on ops/prometheus', { skip }, () => {
  test('promtool check rules accepts every rule file', () => {
    const run = promtool(['check', 'rules', ...RULE_FILES.map((f) => join(RULES_DIR, f))]);
    assert.equal(run.status, 0, run.output);
    assert.match(run.output, /SUCCESS/);
  });

  test('promtool test rules passes the unit tests', () => {
    const run = promtool(['test', 'rules', ...RULE_TEST_FILES.map((f) => join(RULES_DIR, f))]);
    assert.equal(run.status, 0, run.output);
    assert.match(run.output, /SUCCESS/);
  });
});

describe('the unit tests cover every alert', () => {
  const rules = loadRules();
  const cases = loadRuleTests().flatMap(({ doc }) => doc.tests.flatMap((t) => t.alert_rule_test ?? []));

  test('every alert has a summary, a description and a runbook', () => {
    assert.ok(rules.length >= 5, `only ${rules.length} alerts`);
    for (const rule of rules) {
      for (const key of ['summary', 'description', 'runbook']) {
        assert.ok((rule.annotations?.[key] ?? '').length > 20, `${rule.alert} has no ${key}`);
      }
      assert.ok(rule.labels?.severity, `${rule.alert} has no severity`);
    }
  });

  test('every alert fires in some test and stays quiet in another', () => {
    for (const rule of rules) {
      const own = cases.filter((c) => c.alertname === rule.alert);
      assert.ok(
        own.some((c) => (c.exp_alerts ?? []).length > 0),
        `no test fires ${rule.alert}`,
      );
      assert.ok(
        own.some((c) => (c.exp_alerts ?? []).length === 0),
        `no test shows ${rule.alert} quiet below its threshold`,
      );
    }
    const unknown = cases.filter((c) => !rules.some((r) => r.alert === c.alertname));
    assert.deepEqual(
      unknown.map((c) => c.alertname),
      [],
      'tests of alerts the rules do not define',
    );
  });
});
