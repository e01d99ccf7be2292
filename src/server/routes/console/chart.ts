import type { ChartDay } from '../../../domain/console/console-service.js';
import { html, type SafeHtml } from './html.js';

const WIDTH = 640;
const HEIGHT = 220;
const PAD = { left: 36, right: 56, top: 12, bottom: 28 };

/** A scale's top: the smallest of 1, 2, 5 × 10^n at or above the largest value (at least 1). */
function niceMax(value: number): number {
  if (value <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((m) => m * power).find((n) => n >= value)!;
}

const round = (n: number) => Math.round(n * 10) / 10;

/**
 * Opens, clicks (left scale) and attributed revenue (right scale) per day, drawn on the server as an SVG: one
 * path per series, a circle per non-zero point, the axes' extremes and the first and last dates. No script.
 */
export function chartSvg(days: ChartDay[]): SafeHtml {
  const innerW = WIDTH - PAD.left - PAD.right;
  const innerH = HEIGHT - PAD.top - PAD.bottom;
  const countMax = niceMax(Math.max(0, ...days.map((d) => Math.max(d.opens, d.clicks))));
  const revenueMax = niceMax(Math.max(0, ...days.map((d) => d.revenue)));
  const x = (i: number) => round(PAD.left + (days.length <= 1 ? 0 : (i * innerW) / (days.length - 1)));
  const y = (value: number, max: number) => round(PAD.top + innerH - (value / max) * innerH);
  const series = [
    { key: 'opens', label: 'Opens', color: '#2563eb', max: countMax, value: (d: ChartDay) => d.opens },
    { key: 'clicks', label: 'Clicks', color: '#16a34a', max: countMax, value: (d: ChartDay) => d.clicks },
    { key: 'revenue', label: 'Revenue (right scale)', color: '#c2410c', max: revenueMax, value: (d: ChartDay) => d.revenue },
  ];
  const paths = series.map((s) => {
    const d = days.map((day, i) => `${i === 0 ? 'M' : 'L'}${x(i)},${y(s.value(day), s.max)}`).join(' ');
    const points = days.flatMap((day, i) =>
      s.value(day) > 0 ? [html`<circle cx="${x(i)}" cy="${y(s.value(day), s.max)}" r="2.5" fill="${s.color}"><title>${day.date}: ${s.value(day)}</title></circle>`] : [],
    );
    return html`<path data-series="${s.key}" d="${d}" fill="none" stroke="${s.color}" stroke-width="2"/>${points}`;
  });
  const legend = series.map((s) => html`<span class="key"><i style="background:${s.color}"></i>${s.label}</span>`);
  return html`<figure class="chart"><svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="Opens, clicks and revenue per day" preserveAspectRatio="xMidYMid meet">
<line x1="${PAD.left}" y1="${PAD.top + innerH}" x2="${WIDTH - PAD.right}" y2="${PAD.top + innerH}" stroke="#999"/>
<line x1="${PAD.left}" y1="${PAD.top}" x2="${PAD.left}" y2="${PAD.top + innerH}" stroke="#ccc"/>
<line x1="${WIDTH - PAD.right}" y1="${PAD.top}" x2="${WIDTH - PAD.right}" y2="${PAD.top + innerH}" stroke="#ccc"/>
<text x="${PAD.left - 4}" y="${PAD.top + 4}" text-anchor="end" font-size="11">${countMax}</text>
<text x="${PAD.left - 4}" y="${PAD.top + innerH}" text-anchor="end" font-size="11">0</text>
<text x="${WIDTH - PAD.right + 4}" y="${PAD.top + 4}" font-size="11" fill="#c2410c">${revenueMax}</text>
<text x="${PAD.left}" y="${HEIGHT - 8}" font-size="11">${days[0]?.date ?? ''}</text>
<text x="${WIDTH - PAD.right}" y="${HEIGHT - 8}" text-anchor="end" font-size="11">${days.at(-1)?.date ?? ''}</text>
${paths}</svg><figcaption>${legend}</figcaption></figure>`;
}
