import type { CalibrationConfig } from '../config/index.js';

/**
 * Turns raw model scores into calibrated probabilities, in place:
 * - platt: sigmoid(a·x + b);
 * - isotonic: piecewise-linear through the (x, y) points, flat beyond the ends;
 * - downsampling: undoes negative down-sampling at `rate` (the share of negatives kept):
 *   p / (p + (1 − p) / rate).
 */
export function calibrate(values: Float64Array, calibration: CalibrationConfig): void {
  switch (calibration.method) {
    case 'platt': {
      const { a, b } = calibration;
      for (let i = 0; i < values.length; i++) values[i] = 1 / (1 + Math.exp(-(a * values[i]! + b)));
      return;
    }
    case 'isotonic': {
      const { x, y } = calibration;
      const last = x.length - 1;
      for (let i = 0; i < values.length; i++) {
        const v = values[i]!;
        if (v <= x[0]!) values[i] = y[0]!;
        else if (v >= x[last]!) values[i] = y[last]!;
        else {
          let hi = 1;
          while (x[hi]! < v) hi++;
          const t = (v - x[hi - 1]!) / (x[hi]! - x[hi - 1]!);
          values[i] = y[hi - 1]! + t * (y[hi]! - y[hi - 1]!);
        }
      }
      return;
    }
    case 'downsampling': {
      const { rate } = calibration;
      for (let i = 0; i < values.length; i++) {
        const p = values[i]!;
        values[i] = p / (p + (1 - p) / rate);
      }
      return;
    }
  }
}
