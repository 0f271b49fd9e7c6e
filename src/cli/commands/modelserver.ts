import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { writeDemoModels } from '../../modelserver/demo-models.js';
import { startModelServerPart } from '../../modelserver/index.js';
import { LatticeError } from '../../platform/errors.js';
import { serveTlsByDefault, tlsOf } from '../../platform/http/index.js';
import { createLogger } from '../../platform/logging/index.js';
import { Metrics } from '../../platform/metrics/index.js';
import { Platform } from '../../platform/platform.js';
import { loadSettings } from '../../platform/settings/index.js';
import { onShutdownSignal } from '../../platform/shutdown.js';
import type { Invocation } from '../command-kit.js';
import { checkExposure } from '../exposure.js';
import type { DemoModelsOptions, ModelServerOptions } from './modelserver.command.js';

/** `lattice modelserver demo-models`: writes the tiny demo models into the repository. */
export async function runDemoModels({ options, context }: Invocation<DemoModelsOptions>): Promise<void> {
  const settings = loadSettings({ file: context.settingsFile });
  const repository = resolve(options.repository ?? settings.modelserver.repository);
  for (const model of writeDemoModels(repository)) {
    console.log(`wrote ${model.path}\n  ${model.name} v${model.version}: ${model.description}`);
  }
  console.log(`Serve them with: lattice modelserver --repository ${repository}`);
}

/**
 * `lattice modelserver`: serves a Triton-layout ONNX model repository (default `<dataDir>/models`)
 * over KServe v2 gRPC.
 */
export async function runModelServer({
  options: values,
  context,
}: Invocation<ModelServerOptions>): Promise<void> {
  const settings = loadSettings({ file: context.settingsFile });
  checkExposure(
    settings,
    [{ name: 'model server gRPC', auth: 'callerTokens' }],
    values.host ?? settings.host,
  );
  const repository = resolve(values.repository ?? settings.modelserver.repository);
  if (!existsSync(repository)) {
    throw new LatticeError(
      'FAILED_PRECONDITION',
      `model repository ${repository} does not exist; create it (<model>/<version>/model.onnx) or run: lattice modelserver demo-models --repository ${repository}`,
    );
  }

  const logger = createLogger('modelserver', { level: settings.logLevel });
  serveTlsByDefault(tlsOf(settings).server);
  const platform = new Platform(settings, { logger, metrics: new Metrics() });
  const server = await startModelServerPart(platform, values.port ?? settings.modelserver.port, {
    repository,
    host: values.host,
    batchWindowMs: values.batchWindowMs,
    maxBatchRows: values.maxBatchRows,
    ownProcess: true,
  });
  process.on('SIGHUP', () => {
    server.reload().then(
      () => logger.info({ models: server.repository.all().map((m) => `${m.name}/${m.version}`) }, 'reloaded'),
      (err: unknown) => logger.error({ err }, 'reload failed; the previous models keep serving'),
    );
  });
  onShutdownSignal(logger, async () => {
    await server.stop();
    await platform.close();
  });

  const host = values.host ?? settings.host;
  console.log(`Model server (KServe v2 gRPC) listening on ${host}:${server.port}, repository ${repository}:`);
  for (const model of server.repository.all()) {
    const io = (specs: typeof model.inputs) =>
      specs.map((s) => `${s.name} ${s.type.kserve} [${s.shape.join(', ')}]`).join(', ');
    console.log(`  ${model.name} v${model.version}: ${io(model.inputs)} → ${io(model.outputs)}`);
  }
  console.log('Ctrl-C stops it, draining in-flight calls; SIGHUP reloads the repository.');
}
