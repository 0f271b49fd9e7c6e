/**
 * `npm run bench -- shadow [rate] [targets]`: the primary's latency with a 100 % shadow against no
 * shadow (shadow-overhead.ts). The last line is JSON with `p99_ms`, `shadow_p99_ms` and
 * `shadow_p99_increase` (a fraction: 0.05 is +5 %).
 */
import { measureShadowOverhead } from './shadow-overhead.js';

const rate = Number(process.argv[2] ?? 100);
const targets = Number(process.argv[3] ?? 200);
const result = await measureShadowOverhead({ rate, roundSeconds: 4, rounds: 4, targets });
console.log(
  `${rate} requests/s of ${targets} targets per arm: p50 ${result.p50_ms.toFixed(2)} ms → ${result.shadow_p50_ms.toFixed(2)} ms, ` +
    `p99 ${result.p99_ms.toFixed(2)} ms → ${result.shadow_p99_ms.toFixed(2)} ms with a 100 % shadow ` +
    `(${(100 * result.shadow_p99_increase).toFixed(1)} %; ${result.compared} compared, ${result.dropped} dropped)`,
);
console.log(JSON.stringify({ bench: 'shadow', rate, targets, ...result }));
