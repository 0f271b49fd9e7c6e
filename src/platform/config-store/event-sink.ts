import { LatticeError } from '../errors.js';
import type { ConfigEvent, ConfigListener, ConfigWatchOptions } from './config-store.js';

/**
 * Delivers a watch's events to its listener, one at a time, and stops delivering once closed.
 * A listener that throws must not kill the watch (nor, inside the etcd client's stream handler, the
 * process): its error goes to `onError`, like every other problem the watch recovers from.
 */
export class ConfigEventSink {
  private closed = false;

  constructor(
    private readonly listener: ConfigListener,
    private readonly onError: ConfigWatchOptions['onError'],
  ) {}

  get isClosed(): boolean {
    return this.closed;
  }

  emit(event: ConfigEvent): void {
    if (this.closed) return;
    try {
      this.listener(event);
    } catch (err) {
      this.error(
        new LatticeError('INTERNAL', `config watch listener threw on ${event.type} ${event.key}`, {
          cause: err,
        }),
      );
    }
  }

  error(error: LatticeError): void {
    if (this.closed) return;
    if (this.onError === undefined) {
      process.emitWarning(error);
      return;
    }
    try {
      this.onError(error);
    } catch (err) {
      process.emitWarning(
        new LatticeError('INTERNAL', 'config watch onError callback threw', { cause: err }),
      );
    }
  }

  close(): void {
    this.closed = true;
  }
}
