import type { Command } from 'commander';
import { type CliSession, lazyAction } from '../command-kit.js';

export interface UpOptions {
  seedDemo?: boolean;
}

/** `lattice up`. */
export function defineUp(program: Command, session: CliSession): void {
  const command = program
    .command('up')
    .summary('start every part of the platform (embedded adapters by default)')
    .description(
      'Starts every part on the configured adapters (embedded by default) and prints where each listens: ' +
        'the reference feature store, model server and compute server, the orchestrator, vss serving, ' +
        'consumers and admin. Every port is checked before anything starts. The example model ' +
        '"catalog_ranker" is seeded into an empty file config store, and the vss demo into a fresh PGlite ' +
        'store; into etcd or PostgreSQL (shared by other deployments) only with --seed-demo. Ctrl-C ' +
        '(SIGINT/SIGTERM) drains in-flight calls, then stops.',
    )
    .option(
      '--seed-demo',
      'seed the example model and the vss demo into a shared store (etcd, PostgreSQL) too',
    );
  lazyAction<UpOptions>(command, session, async () => (await import('./up.js')).runUp);
}
