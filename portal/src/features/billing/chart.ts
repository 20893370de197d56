// The spend chart of the billing page: daily request spend of the wallet over 30 days as an SVG
// bar chart drawn on the server, so it needs no script and passes the portal's CSP (presentation
// attributes only, no inline style). Only numbers and dates go into it.

import { formatUsd } from '../../web/usd.js';

const width = 720;
const height = 180;
const padding = { right: 8, top: 12, bottom: 28 };

/** A "nice" upper bound for the axis: 1, 2 or 5 × a power of ten. */
function niceMax(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (value <= step * power) return step * power;
  return 10 * power;
}

/**
 * The axis's three ticks (0, half, max) in one format: cents from $1 up (whole dollars from
 * $100), and below a dollar as many decimals as the half tick needs ($0.025, not $0.03).
 */
function axisLabels(max: number): string[] {
  const half = max / 2;
  let decimals = 0;
  while (decimals < 9 && Math.abs(Number(half.toFixed(decimals)) - half) > half * 1e-9) decimals++;
  if (max < 100) decimals = Math.max(2, decimals);
  return [0, half, max].map((v) => `$${v.toFixed(decimals)}`);
}

/** SVG markup for `days` (oldest first). */
export function spendChart(days: readonly { day: string; usd: number }[]): string {
  const max = niceMax(Math.max(0, ...days.map((d) => d.usd)));
  const tickLabels = axisLabels(max);
  // Room for the longest tick label at 11 px (~7 px a character), so none is cut at the edge.
  const left = Math.max(48, 12 + 7 * Math.max(...tickLabels.map((t) => t.length)));
  const pad = { ...padding, left };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const slot = plotW / Math.max(1, days.length);
  const bars = days
    .map((d, i) => {
      const h = d.usd <= 0 ? 0 : Math.max(1, (d.usd / max) * plotH);
      const x = pad.left + i * slot + slot * 0.15;
      const y = pad.top + plotH - h;
      return `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${(slot * 0.7).toFixed(1)}" height="${h.toFixed(1)}" fill="#4f5bd5" rx="2"><title>${d.day}: ${formatUsd(d.usd)}</title></rect>`;
    })
    .join('');
  const ticks = [0, 0.5, 1]
    .map((f, i) => {
      const y = pad.top + plotH - f * plotH;
      return (
        `<line x1="${pad.left}" x2="${width - pad.right}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="#e4e7ec" />` +
        `<text x="${pad.left - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end" font-size="11" fill="#667085">${tickLabels[i]}</text>`
      );
    })
    .join('');
  const first = days[0]?.day ?? '';
  const last = days.at(-1)?.day ?? '';
  const axis =
    `<text x="${pad.left}" y="${height - 8}" font-size="11" fill="#667085">${first}</text>` +
    `<text x="${width - pad.right}" y="${height - 8}" font-size="11" fill="#667085" text-anchor="end">${last}</text>`;
  const total = days.reduce((sum, d) => sum + d.usd, 0);
  return (
    `<svg class="spend-chart" viewBox="0 0 ${width} ${height}" width="100%" role="img" ` +
    `aria-label="Daily spend from ${first} to ${last}, ${formatUsd(total)} in total">${ticks}${bars}${axis}</svg>`
  );
}
