/** Loading data into a page: once, again on demand, or every few seconds while the page is open. */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * Runs `load` when `deps` change (and every `everyMs` when given), keeping the last good data when a
 * later poll fails: a page that polls shows its error above what it showed before.
 */
export function useLoad<T>(
  load: (signal: AbortSignal) => Promise<T>,
  deps: unknown[],
  everyMs?: number,
): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loader = useRef(load);
  loader.current = load;
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const value = await loader.current(controller.signal);
        if (controller.signal.aborted) return;
        setData(value);
        setError(undefined);
      } catch (err) {
        if (controller.signal.aborted) return;
        setError(err instanceof ApiError ? err : new ApiError(0, 'INTERNAL', String(err)));
      } finally {
        if (!controller.signal.aborted) {
          setLoading(false);
          if (everyMs !== undefined) timer = setTimeout(run, everyMs);
        }
      }
    };
    setLoading(true);
    void run();
    return () => {
      controller.abort();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [...deps, tick, everyMs]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload };
}

/** The window's width class: the layouts differ below 700 px (a phone held upright). */
export function useNarrow(): boolean {
  const query = '(max-width: 700px)';
  const [narrow, setNarrow] = useState(() => matchMedia(query).matches);
  useEffect(() => {
    const list = matchMedia(query);
    const change = () => setNarrow(list.matches);
    list.addEventListener('change', change);
    return () => list.removeEventListener('change', change);
  }, []);
  return narrow;
}
