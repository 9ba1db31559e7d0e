// Line plots of the last hour on a <canvas>, drawn by hand: one or two series of [time, value],
// the time axis the hour (or since the first sample, when there is less of it).

const HOUR_MS = 3_600_000;
const COLOURS = ['#2c7fb8', '#d95f02'];

export type Series = readonly (readonly [number, number])[];

/** Draws `series` on `canvas` for the hour up to `now`; the largest value labels the top. */
export function drawPlot(
  canvas: HTMLCanvasElement,
  series: readonly Series[],
  now: number,
  unit: (v: number) => string,
): void {
  const ratio = window.devicePixelRatio || 1;
  const width = Math.max(1, Math.round(canvas.clientWidth * ratio));
  const height = Math.max(1, Math.round(canvas.clientHeight * ratio));
  if (canvas.width !== width || canvas.height !== height) {
    canvas.width = width;
    canvas.height = height;
  }
  const g = canvas.getContext('2d');
  if (g === null) return;
  g.clearRect(0, 0, width, height);
  const pad = 4 * ratio;
  const top = 14 * ratio;
  let most = 0;
  for (const s of series) for (const [, v] of s) most = Math.max(most, v);
  const scale = most > 0 ? most : 1;
  g.strokeStyle = '#dde1e6';
  g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const y = top + ((height - top - pad) * i) / 4;
    g.beginPath();
    g.moveTo(pad, y);
    g.lineTo(width - pad, y);
    g.stroke();
  }
  g.fillStyle = '#57606a';
  g.font = `${11 * ratio}px system-ui, sans-serif`;
  // The hour, or since the first sample when there is less: a new unikernel's plot is not a dot.
  let first = now;
  for (const s of series) if (s.length > 0) first = Math.min(first, (s[0] as readonly [number, number])[0]);
  const start = Math.max(now - HOUR_MS, first - 1000);
  const span = Math.max(1, now - start);
  const x = (t: number) => pad + ((width - 2 * pad) * (t - start)) / span;
  const minutes = Math.round(span / 60_000);
  const across = minutes > 0 ? `${minutes} min` : `${Math.round(span / 1000)} s`;
  g.fillText(`max ${unit(most)}, last ${across}`, pad, 11 * ratio);
  const y = (v: number) => height - pad - ((height - top - pad) * v) / scale;
  series.forEach((s, i) => {
    if (s.length === 0) return;
    g.strokeStyle = COLOURS[i % COLOURS.length] as string;
    g.fillStyle = g.strokeStyle;
    g.lineWidth = 2 * ratio;
    g.beginPath();
    for (const [j, [t, v]] of s.entries()) {
      if (j === 0) g.moveTo(x(t), y(v));
      else g.lineTo(x(t), y(v));
    }
    g.stroke();
    // The latest sample as a dot, so a single sample shows too.
    const [lt, lv] = s[s.length - 1] as readonly [number, number];
    g.beginPath();
    g.arc(x(lt), y(lv), 2.5 * ratio, 0, 2 * Math.PI);
    g.fill();
  });
}

/** Per-second rates between consecutive samples of a counter. */
export function rates(points: readonly (readonly [number, number])[]): Series {
  const out: [number, number][] = [];
  for (let i = 1; i < points.length; i++) {
    const [t0, v0] = points[i - 1] as readonly [number, number];
    const [t1, v1] = points[i] as readonly [number, number];
    if (t1 > t0 && v1 >= v0) out.push([t1, ((v1 - v0) * 1000) / (t1 - t0)]);
  }
  return out;
}
