/**
 * A live time series (uPlot): the page appends a point per poll and the chart keeps the last
 * `keep` of them. uPlot draws on a canvas, so the chart carries a text summary for screen readers.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Series {
  label: string;
  color: string;
}

export function LiveChart({
  title,
  series,
  points,
  unit,
}: {
  title: string;
  series: Series[];
  /** [seconds since epoch, value per series][]. */
  points: number[][];
  unit: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const data = (): uPlot.AlignedData => [
    points.map((p) => p[0]!),
    ...series.map((_s, i) => points.map((p) => p[i + 1] ?? null)),
  ];
  useEffect(() => {
    if (box.current === null) return;
    const width = Math.max(240, Math.min(box.current.clientWidth || 320, 560));
    plot.current = new uPlot(
      {
        width,
        height: 160,
        series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2 }))],
        axes: [{}, { label: unit, size: 50 }],
        legend: { show: true },
      },
      data(),
      box.current,
    );
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
  }, [series.map((s) => s.label).join()]);
  useEffect(() => {
    plot.current?.setData(data());
  });
  const last = points[points.length - 1];
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} />
      <p class="sr-only">
        {last === undefined
          ? 'No samples yet.'
          : series.map((s, i) => `${s.label}: ${(last[i + 1] ?? 0).toFixed(2)} ${unit}`).join('; ')}
      </p>
    </figure>
  );
}
