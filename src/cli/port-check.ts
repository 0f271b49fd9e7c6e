/**
 * Checks, before anything starts, that every port a command will listen on is free, and reports all
 * the conflicts at once, each with the setting and variable that move it. A conflict found only when
 * its server starts would stop the start-up half way, one port at a time, after a grpc-js log line.
 * (A port taken between the check and the server's bind still fails there, as before.)
 */
import { connect, createServer } from 'node:net';
import { LatticeError } from '../platform/errors.js';
import { settingsEnv } from '../platform/settings/index.js';

export interface PlannedPort {
  /** The settings path (`vss.admin.port`) or the flag (`--port`) that sets it. */
  setting: string;
  port: number;
}

function bindable(host: string, port: number): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

export async function checkPortsFree(host: string, planned: readonly PlannedPort[]): Promise<void> {
  const conflicts: string[] = [];
  const seen = new Map<number, string>();
  for (const { setting, port } of planned) {
    if (port === 0) continue; // any free port
    const twice = seen.get(port);
    if (twice !== undefined) {
      conflicts.push(`port ${port} is set for both ${twice} and ${setting}`);
      continue;
    }
    seen.set(port, setting);
    const err = await bindable(host, port);
    if (err === undefined) continue;
    const env = settingsEnv.find((e) => e.path === setting)?.env;
    const change = env === undefined ? setting : `${setting} (${env})`;
    const why = err.code === 'EADDRINUSE' ? 'is in use' : `cannot be bound (${err.code ?? err.message})`;
    conflicts.push(`${host}:${port} ${why}: change ${change}`);
  }
  if (conflicts.length > 0) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `${conflicts.length === 1 ? 'a port' : `${conflicts.length} ports`} cannot be used, nothing was started:\n  ${conflicts.join('\n  ')}`,
    );
  }
}

/**
 * A readiness check of a server of this process: resolves once a connection to it is accepted, so
 * /readyz fails when a part's server stopped listening while its adapters still answer.
 */
export function acceptsConnections(host: string, port: number): () => Promise<void> {
  const target = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return () =>
    new Promise<void>((resolve, reject) => {
      const socket = connect({ host: target, port });
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', (err) =>
        reject(new Error(`not accepting connections on ${target}:${port}: ${err.message}`)),
      );
    });
}
