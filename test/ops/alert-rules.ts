/**
 * What the alert rules under ops/prometheus read, taken from the files themselves so the tests that
 * hold the names against a live /metrics cannot drift from the rules: the metric selectors of each
 * rule's PromQL expression (metric name and the label names it matches on), the label names it
 * groups or joins by, and the input series of the promtool unit tests. Also the Prometheus text
 * exposition parsed into metric name → label-name sets.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

export const RULES_DIR = join(import.meta.dirname, '..', '..', 'ops', 'prometheus');
export const RULE_FILES = ['vss-alerts.yml'];
export const RULE_TEST_FILES = ['vss-alerts.test.yml'];

/** Labels Prometheus attaches at scrape time: never on /metrics, allowed on test series. */
export const TARGET_LABELS = new Set(['instance', 'job']);

export interface Selector {
  metric: string;
  labels: string[];
}

export interface RuleUse {
  alert: string;
  expr: string;
  selectors: Selector[];
  /** Label names of `by`, `without`, `on`, `ignoring`, `group_left` and `group_right`. */
  grouping: string[];
}

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export function loadRules(): AlertRule[] {
  return RULE_FILES.flatMap((file) => {
    const doc = parse(readFileSync(join(RULES_DIR, file), 'utf8')) as {
      groups: { name: string; rules: AlertRule[] }[];
    };
    return doc.groups.flatMap((group) => group.rules.filter((rule) => rule.alert !== undefined));
  });
}

// PromQL words that are not metric names where an identifier may stand.
const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'inf',
  'nan',
  'atan2',
]);

const MATCHER = /([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*""/g;

/** The metric selectors and grouping labels of one PromQL expression. */
export function analyseExpression(expr: string): { selectors: Selector[]; grouping: string[] } {
  // Strings first (a label value may hold anything), then ranges, subqueries and offsets.
  let text = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  text = text.replace(/\[[^\]]*\]/g, ' ').replace(/\boffset\s+-?[0-9a-z]+/gi, ' ');
  const grouping: string[] = [];
  text = text.replace(
    /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g,
    (_all, _word: string, list: string) => {
      for (const name of list.split(',')) if (name.trim() !== '') grouping.push(name.trim());
      return ' ';
    },
  );
  const selectors: Selector[] = [];
  const selector =
    /([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}|([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?|[0-9][0-9.eE+-]*/g;
  for (const match of text.matchAll(selector)) {
    const [, named, matchers, bare, call] = match;
    if (matchers !== undefined) {
      const labels = [...matchers.matchAll(MATCHER)].map((m) => m[1]!);
      const nameMatcher = labels.indexOf('__name__');
      if (named === undefined || KEYWORDS.has(named)) {
        if (nameMatcher >= 0) throw new Error(`a __name__ selector is not analysed: ${expr}`);
        throw new Error(`a selector without a metric name is not analysed: ${expr}`);
      }
      selectors.push({ metric: named, labels });
    } else if (bare !== undefined && call === undefined && !KEYWORDS.has(bare.toLowerCase())) {
      selectors.push({ metric: bare, labels: [] });
    }
  }
  return { selectors, grouping };
}

export function ruleUses(): RuleUse[] {
  return loadRules().map((rule) => ({ alert: rule.alert, expr: rule.expr, ...analyseExpression(rule.expr) }));
}

export interface TestSeries {
  file: string;
  series: string;
  metric: string;
  labels: string[];
}

interface RuleTestFile {
  tests: {
    input_series?: { series: string; values: string }[];
    alert_rule_test?: { alertname: string; eval_time: string; exp_alerts?: unknown[] }[];
  }[];
}

export function loadRuleTests(): { file: string; doc: RuleTestFile }[] {
  return RULE_TEST_FILES.map((file) => ({
    file,
    doc: parse(readFileSync(join(RULES_DIR, file), 'utf8')) as RuleTestFile,
  }));
}

/** Every input series of the promtool tests: `name{a="1",b="2"}` → name and label names. */
export function ruleTestSeries(): TestSeries[] {
  return loadRuleTests().flatMap(({ file, doc }) =>
    doc.tests.flatMap((t) =>
      (t.input_series ?? []).map(({ series }) => {
        const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{(.*)\})?$/.exec(series.trim());
        if (!match) throw new Error(`${file}: cannot read series ${series}`);
        const labels = [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"/g)].map((m) => m[1]!);
        return { file, series, metric: match[1]!, labels };
      }),
    ),
  );
}

/** Metric name → the label-name sets of its samples (sorted, joined by ","), from exposition text. */
export function exportedSeries(text: string): Map<string, Set<string>> {
  const exported = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s/.exec(line);
    if (!match) continue;
    const labels = [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)]
      .map((m) => m[1]!)
      .sort();
    let sets = exported.get(match[1]!);
    if (!sets) {
      sets = new Set();
      exported.set(match[1]!, sets);
    }
    sets.add(labels.join(','));
  }
  return exported;
}

/** Every label name of any sample of `metric`. */
export function labelNamesOf(exported: Map<string, Set<string>>, metric: string): Set<string> {
  const names = new Set<string>();
  for (const set of exported.get(metric) ?? []) for (const name of set.split(',')) if (name) names.add(name);
  return names;
}
