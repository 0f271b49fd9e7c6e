/**
 * PGlite's file system for a data directory on disk (its `NodeFS`), with the flush to disk that
 * PostgreSQL asks for. PGlite starts PostgreSQL with `fsync` off (`-F`), and the Emscripten file
 * system under NodeFS answers `fsync` with success without asking the operating system (upstream
 * electric-sql/pglite#1107): every commit reaches the OS page cache, which survives a killed
 * process, but not an OS crash or a power loss, after which PostgreSQL may find its last commits
 * gone or its files torn.
 *
 * So here the directory's file streams get an `fsync` that calls the OS's, and PostgreSQL runs with
 * `fsync` on and `wal_sync_method=fsync` ({@link durableStartParams}): its `fdatasync` is a no-op
 * in PGlite's build, its `fsync` reaches the streams. A commit then returns once its WAL is on disk,
 * and checkpoints flush the data files before the WAL that covers them is recycled, as on any
 * PostgreSQL server.
 */
import { fsyncSync } from 'node:fs';
import { PGlite, type PGliteInterface } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';

/** What PGlite's NodeFS hands Emscripten; only `preRun` is touched here. */
type EmscriptenOptions = Awaited<ReturnType<NodeFS['init']>>['emscriptenOpts'];

/** The parts of Emscripten's NODEFS this needs (not in PGlite's types). */
interface NodeFsModule {
  NODEFS?: {
    stream_ops?: Record<string, unknown>;
    realPath(node: unknown): string;
    /** Runs a host file operation, turning its error into the errno PostgreSQL sees. */
    tryFSOperation<T>(operation: () => T): T;
  };
}

interface NodeFsStream {
  /** The host file descriptor NODEFS opened for the stream. */
  nfd?: number;
  node: unknown;
}

/** PGlite's start parameters with flushing on: its defaults without `-F`, WAL synced by fsync(). */
export function durableStartParams(): string[] {
  return [...PGlite.defaultStartParams.filter((p) => p !== '-F'), '-c', 'wal_sync_method=fsync'];
}

export class FlushingNodeFS extends NodeFS {
  readonly #onFlush: ((path: string) => void) | undefined;

  /** `onFlush` hears each file flushed, by host path (metrics, tests). */
  constructor(dataDir: string, onFlush?: (path: string) => void) {
    super(dataDir);
    this.#onFlush = onFlush;
  }

  override async init(
    pg: PGliteInterface,
    opts: Parameters<NodeFS['init']>[1],
  ): Promise<{ emscriptenOpts: EmscriptenOptions }> {
    const { emscriptenOpts } = await super.init(pg as Parameters<NodeFS['init']>[0], opts);
    const onFlush = this.#onFlush;
    const installFlush = (mod: unknown) => {
      const nodefs = (mod as NodeFsModule).NODEFS;
      const streamOps = nodefs?.stream_ops;
      // A PGlite whose NODEFS is laid out otherwise must not run silently without flushing.
      if (nodefs === undefined || streamOps === undefined) {
        throw new Error('this PGlite build has no NODEFS stream operations to flush its files through');
      }
      streamOps.fsync = (stream: NodeFsStream): number => {
        const fd = stream.nfd;
        if (fd === undefined) return 0;
        // A failed flush reaches PostgreSQL as its errno, which it treats as fatal (as it should).
        nodefs.tryFSOperation(() => fsyncSync(fd));
        onFlush?.(nodefs.realPath(stream.node));
        return 0;
      };
    };
    return {
      emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), installFlush] },
    };
  }
}
