/**
 * A loopback port nothing listens on: bound once to get a free one, then closed. A command pointed
 * at it finds no server there (connection refused), which is what "nothing running" means in a test.
 */
import { createServer } from 'node:net';

export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
