/** Memory measurement for benchmarks: resident set size after the garbage is collected. */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** RSS after two full collections (the second catches what the first's finalizers freed). */
export function settledRss(): number {
  gc();
  gc();
  return process.memoryUsage().rss;
}
