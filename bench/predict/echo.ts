/**
 * The predict benchmark's baseline: a bare grpc-js server with the generated `orchestrator.v1.Predict`
 * definition answering every call with one real PredictResponse, in its own process like the
 * orchestrator it is compared with (forked by index.ts). Receives the response bytes (base64) over
 * IPC, sends `{ port }`, and exits when the channel closes.
 */
import * as grpc from '@grpc/grpc-js';
import {
  PredictResponse,
  type PredictServer,
  PredictService,
} from '../../src/gen/orchestrator/v1/predict.js';
import { listen } from '../../src/platform/grpc/listen.js';

if (process.send !== undefined) {
  process.once('message', async (message: { response: string }) => {
    const canned = PredictResponse.decode(Buffer.from(message.response, 'base64'));
    const server = new grpc.Server();
    const answer: PredictServer['inferPointWise'] = (_call, cb) => cb(null, canned);
    server.addService(PredictService, {
      inferPointWise: answer,
      inferPairWise: answer,
      inferSlateWise: answer,
    } satisfies PredictServer);
    const port = await listen(server);
    process.send!({ port });
    process.once('disconnect', () => server.forceShutdown());
  });
}
