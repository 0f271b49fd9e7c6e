/**
 * The echo server of echo-server.ts in a small process of its own (forked by index.ts with an IPC
 * channel): no index, no SQL, no heap to speak of. Receives the canned SearchResponse, answers with
 * its port, and exits when the channel closes. Paced like the service, it shows the tail this
 * machine gives any grpc-js server.
 */
import type { SearchResponse } from '../../src/gen/vss/v1/vss.js';
import { startEchoServer } from './echo-server.js';

if (process.send !== undefined) {
  process.once('message', async (canned: SearchResponse) => {
    const { port, server } = await startEchoServer(canned);
    process.send!({ port });
    process.once('disconnect', () => {
      server.forceShutdown();
      process.exit(0);
    });
  });
}
