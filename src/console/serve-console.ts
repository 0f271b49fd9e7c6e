/**
 * The web console on an ops HTTP server: the bundled pages at `/` (dist/console, built by
 * `npm run build`), Swagger UI at `/docs` over the server's `GET /openapi.json`, and
 * `GET /api/v1/parts`, which says what this process runs so the console shows only those sections.
 * Everything is served from the package: the browser loads nothing from the internet.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { packageRoot } from '../platform/package-root.js';

/** What `GET /api/v1/parts` answers. */
export interface ConsoleParts {
  orchestrator: boolean;
  vss: { admin: boolean; serving: boolean };
  /** The reference feature store, model server and compute (lattice up). */
  reference: boolean;
}

export interface ConsoleOptions {
  parts: ConsoleParts;
  /** The built console; default dist/console of the package. */
  root?: string;
}

export const PARTS_PATH = '/api/v1/parts';
export const DEFAULT_CONSOLE_ROOT = join(packageRoot, 'dist', 'console');

const partsSchema = {
  summary: 'What this process runs: the console shows the sections of these parts',
  tags: ['console'],
  response: {
    200: {
      type: 'object',
      required: ['orchestrator', 'vss', 'reference'],
      properties: {
        orchestrator: { type: 'boolean' },
        vss: {
          type: 'object',
          required: ['admin', 'serving'],
          properties: { admin: { type: 'boolean' }, serving: { type: 'boolean' } },
        },
        reference: { type: 'boolean' },
      },
    },
  },
};

/**
 * Registers the console's routes on `app` (before it listens). A clone running its sources without
 * a build has no dist/console: `/` then answers 503 saying how to build it, and the APIs still work.
 */
export async function registerConsole(app: FastifyInstance, options: ConsoleOptions): Promise<void> {
  const root = options.root ?? DEFAULT_CONSOLE_ROOT;
  app.get(PARTS_PATH, { schema: partsSchema }, async () => options.parts);
  if (!existsSync(join(root, 'index.html'))) {
    const notBuilt = async (_request: unknown, reply: { status(n: number): { send(b: unknown): unknown } }) =>
      reply.status(503).send({
        error: { code: 'UNAVAILABLE', message: `the console is not built (no ${root}): run npm run build` },
      });
    app.get('/', { schema: { hide: true } }, notBuilt);
    app.get('/docs', { schema: { hide: true } }, notBuilt);
    return;
  }
  // One route per file found now (wildcard off): paths the console does not have stay the server's
  // JSON 404, and no catch-all shadows another part's routes.
  await app.register(fastifyStatic, {
    root,
    prefix: '/',
    wildcard: false,
    index: ['index.html'],
    schemaHide: true,
    // The assets' names carry no content hash, so a browser revalidates them after each release.
    cacheControl: true,
    maxAge: 0,
  });
  app.get('/docs', { schema: { hide: true } }, async (_request, reply) =>
    reply.sendFile('docs/index.html', root),
  );
}
