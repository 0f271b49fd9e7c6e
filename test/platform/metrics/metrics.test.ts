import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { describe, test } from 'node:test';
import { Metrics } from '../../../src/platform/metrics/index.js';
import { eventually } from '../../support/servers.js';

async function statsdListener() {
  const socket = createSocket('udp4');
  const packets: string[] = [];
  socket.on('message', (msg) => packets.push(...msg.toString().split('\n')));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { socket, packets, port: socket.address().port };
}

describe('Metrics', () => {
  test('a counter, gauge and timing appear on the Prometheus scrape', async () => {
    const metrics = new Metrics();
    metrics.counter('cache_hits_total', 'hits', ['component']).inc({ component: 'catalog' }, 3);
    metrics.gauge('queue_depth', 'depth', ['topic']).set({ topic: 'logs' }, 7);
    metrics.timing('call_seconds', 'latency', ['target']).observeMs({ target: 'fs' }, 12);
    const { body, contentType } = await metrics.scrape();
    assert.match(contentType, /text\/plain/);
    assert.match(body, /cache_hits_total\{component="catalog"\} 3/);
    assert.match(body, /queue_depth\{topic="logs"\} 7/);
    assert.match(body, /call_seconds_bucket\{le="0.025",target="fs"\} 1/);
    await metrics.close();
  });

  test('declaring a metric twice returns the same series', async () => {
    const metrics = new Metrics();
    metrics.counter('reloads_total', 'reloads').inc();
    metrics.counter('reloads_total', 'reloads').inc();
    assert.match((await metrics.scrape()).body, /reloads_total 2/);
  });

  test('sends StatsD packets with DogStatsD tags', async () => {
    const { socket, packets, port } = await statsdListener();
    const metrics = new Metrics({
      statsd: { host: '127.0.0.1', port, prefix: 'lattice.', tags: 'datadog', maxBufferSize: 0 },
    });
    metrics.counter('cache_hits_total', 'hits', ['component']).inc({ component: 'catalog' });
    metrics.timing('call_seconds', 'latency', ['target']).observeMs({ target: 'fs' }, 12);
    await eventually(() => packets.length >= 2, 10_000, 'two StatsD packets');
    assert.ok(packets.includes('lattice.cache_hits_total:1|c|#component:catalog'), packets.join(' '));
    assert.ok(packets.includes('lattice.call_ms:12|ms|#target:fs'), packets.join(' '));
    await metrics.close();
    socket.close();
  });

  test('a bound series adds to the same Prometheus series and sends the same StatsD packets', async () => {
    const { socket, packets, port } = await statsdListener();
    const metrics = new Metrics({
      statsd: { host: '127.0.0.1', port, prefix: 'lattice.', tags: 'datadog', maxBufferSize: 0 },
    });
    const hits = metrics.counter('bound_hits_total', 'hits', ['component']);
    const calls = metrics.timing('bound_call_seconds', 'latency', ['target']);
    hits.inc({ component: 'catalog' }, 2);
    const boundHits = hits.bind({ component: 'catalog' });
    boundHits.inc();
    boundHits.inc(4);
    calls.bind({ target: 'fs' }).observeMs(12);
    calls.observeMs({ target: 'fs' }, 30);
    const { body } = await metrics.scrape();
    assert.match(body, /bound_hits_total\{component="catalog"\} 7/);
    assert.match(body, /bound_call_seconds_bucket\{le="0.025",target="fs"\} 1/);
    assert.match(body, /bound_call_seconds_count\{target="fs"\} 2/);
    await eventually(() => packets.length >= 5, 10_000, 'five StatsD packets');
    assert.ok(packets.includes('lattice.bound_hits_total:4|c|#component:catalog'), packets.join(' '));
    assert.ok(packets.includes('lattice.bound_call_ms:12|ms|#target:fs'), packets.join(' '));
    await metrics.close();
    socket.close();
  });

  test('plain StatsD drops tags; Telegraf puts them in the name', async () => {
    const { socket, packets, port } = await statsdListener();
    const plain = new Metrics({
      statsd: { host: '127.0.0.1', port, prefix: '', tags: 'none', maxBufferSize: 0 },
    });
    plain.counter('a_total', 'a', ['k']).inc({ k: 'v' });
    const telegraf = new Metrics({
      statsd: { host: '127.0.0.1', port, prefix: '', tags: 'telegraf', maxBufferSize: 0 },
    });
    telegraf.counter('b_total', 'b', ['k']).inc({ k: 'v' });
    await eventually(() => packets.length >= 2, 10_000, 'two StatsD packets');
    assert.ok(packets.includes('a_total:1|c'), packets.join(' '));
    assert.ok(packets.includes('b_total,k=v:1|c'), packets.join(' '));
    await plain.close();
    await telegraf.close();
    socket.close();
  });
});
