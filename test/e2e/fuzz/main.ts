/**
 * `npm run fuzz [-- --requests N --seed S --in-flight K --only WORD]`: the long run of the fuzz
 * suite. Starts both services as their own processes, sends N (default 10,000) generated requests
 * to every RPC of both, checks each answer, runs the known-good requests every 500 requests and at
 * the end, prints one line per RPC and, last, one JSON object with the totals. Exits 1 when any
 * answer was wrong, a known-good request failed, or a process died.
 */
import { parseArgs } from 'node:util';
import { memoryOf } from '../../support/proc-stats.js';
import { fuzzRpc, type RpcReport, rawClient } from './fuzz-runner.js';
import { KNOWN_ISSUES } from './known-issues.js';
import { startFuzzServices } from './services.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '10000' },
    seed: { type: 'string', default: '13' },
    'in-flight': { type: 'string', default: '16' },
    'check-every': { type: 'string', default: '500' },
    only: { type: 'string' },
  },
});
const requests = Number(values.requests);
const seed = Number(values.seed);
const inFlight = Number(values['in-flight']);
const checkEvery = Number(values['check-every']);

const started = performance.now();
const services = await startFuzzServices();
const reports: RpcReport[] = [];
const problems: string[] = [];
try {
  for (const service of [services.orchestrator, services.vss]) {
    const client = rawClient(service.address);
    try {
      for (const [i, rpc] of service.rpcs.entries()) {
        if (values.only && !rpc.path.includes(values.only)) continue;
        let report: RpcReport;
        try {
          report = await fuzzRpc(client, rpc, {
            requests,
            inFlight,
            seed: seed * 100 + i,
            checkEvery,
            knownGood: service.knownGood,
            knownIssues: KNOWN_ISSUES,
          });
        } catch (err) {
          problems.push(`${rpc.path}: known-good request failed: ${String(err)}`);
          continue;
        }
        reports.push(report);
        const rss = memoryOf(service.pid);
        console.log(
          `${rpc.path}: ${report.requests} requests in ${report.ms} ms (${report.perSecond}/s), ` +
            `${report.knownGoodChecks} known-good checks, ${report.failures.length ? `${Object.values(report.failureKinds).reduce((a, b) => a + b, 0)} WRONG` : 'all answers right'}; ` +
            `${JSON.stringify(report.statuses)}; server RSS ${(rss.rss / 2 ** 20).toFixed(0)} MiB (peak ${(rss.peakRss / 2 ** 20).toFixed(0)} MiB)`,
        );
        for (const [kind, count] of Object.entries(report.failureKinds)) console.log(`  ${count} × ${kind}`);
        for (const [issue, count] of Object.entries(report.knownIssueHits))
          console.log(`  ${count} × known: ${issue}`);
        for (const failure of report.failures.slice(0, 10)) console.log(`    e.g. ${failure.slice(0, 300)}`);
        if (service.exited()) {
          problems.push(
            `${service.name} exited: ${JSON.stringify(service.exited())}\n${service.output().slice(-2000)}`,
          );
          break;
        }
      }
    } finally {
      client.close();
    }
  }
} finally {
  const codes = await services.stop();
  if (codes.orchestrator !== 0 || codes.vss !== 0) problems.push(`exit codes ${JSON.stringify(codes)}`);
}
for (const problem of problems) console.log(`PROBLEM: ${problem}`);
const wrong = reports.reduce((n, r) => n + Object.values(r.failureKinds).reduce((a, b) => a + b, 0), 0);
const total = reports.reduce((n, r) => n + r.requests, 0);
console.log(
  JSON.stringify({
    fuzz: 'services',
    seed,
    requests_per_rpc: requests,
    rpcs: reports.length,
    requests: total,
    wrong_answers: wrong,
    known_issue_answers: reports.reduce(
      (n, r) => n + Object.values(r.knownIssueHits).reduce((a, b) => a + b, 0),
      0,
    ),
    known_good_checks: reports.reduce((n, r) => n + r.knownGoodChecks, 0),
    problems: problems.length,
    seconds: Math.round((performance.now() - started) / 1000),
    per_rpc: Object.fromEntries(
      reports.map((r) => [
        r.rpc,
        {
          ...r.statuses,
          wrong: Object.values(r.failureKinds).reduce((a, b) => a + b, 0),
          known_issue: Object.values(r.knownIssueHits).reduce((a, b) => a + b, 0),
          per_second: r.perSecond,
        },
      ]),
    ),
  }),
);
process.exit(wrong > 0 || problems.length > 0 ? 1 : 0);
