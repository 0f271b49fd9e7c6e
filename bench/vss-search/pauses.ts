/**
 * Why a process answered late: event-loop delay (how long a timer waited behind other work or a
 * descheduled process) and GC pauses, since the previous {@link PauseMonitor.take}.
 */
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

export interface Pauses {
  loop_delay_p99_ms: number;
  loop_delay_max_ms: number;
  gc_count: number;
  gc_ms: number;
  gc_max_ms: number;
  /** Of them, full mark-compact collections (the rest are young-generation scavenges and steps). */
  gc_major_count: number;
  gc_major_max_ms: number;
}

export class PauseMonitor {
  private readonly delay = monitorEventLoopDelay({ resolution: 1 });
  private readonly observer: PerformanceObserver;
  private gc = { count: 0, ms: 0, maxMs: 0, majorCount: 0, majorMaxMs: 0 };

  constructor() {
    this.delay.enable();
    this.observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        this.gc.count++;
        this.gc.ms += entry.duration;
        this.gc.maxMs = Math.max(this.gc.maxMs, entry.duration);
        if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
          this.gc.majorCount++;
          this.gc.majorMaxMs = Math.max(this.gc.majorMaxMs, entry.duration);
        }
      }
    });
    this.observer.observe({ entryTypes: ['gc'] });
  }

  /** Pauses since the last call (or since start), then starts counting afresh. */
  take(): Pauses {
    const pauses: Pauses = {
      loop_delay_p99_ms: this.delay.percentile(99) / 1e6,
      loop_delay_max_ms: this.delay.max / 1e6,
      gc_count: this.gc.count,
      gc_ms: this.gc.ms,
      gc_max_ms: this.gc.maxMs,
      gc_major_count: this.gc.majorCount,
      gc_major_max_ms: this.gc.majorMaxMs,
    };
    this.delay.reset();
    this.gc = { count: 0, ms: 0, maxMs: 0, majorCount: 0, majorMaxMs: 0 };
    return pauses;
  }

  stop(): void {
    this.delay.disable();
    this.observer.disconnect();
  }
}

export const describePauses = (p: Pauses): string =>
  `event-loop delay p99 ${p.loop_delay_p99_ms.toFixed(1)} / max ${p.loop_delay_max_ms.toFixed(1)} ms, ` +
  `${p.gc_count} GC pauses totalling ${p.gc_ms.toFixed(0)} ms (longest ${p.gc_max_ms.toFixed(1)} ms; ` +
  `${p.gc_major_count} full, longest ${p.gc_major_max_ms.toFixed(1)} ms)`;
