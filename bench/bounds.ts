import { cpuSecondsOf, type CpuSplit } from './cpu-split.js';

/** Issue 16's goals: each event route's requests/s as a share of the bare route's with the same body. */
export const RATIO_GOALS: Record<string, Record<string, number>> = {
  sqlite: { collect: 0.35, events: 0.35, webhook: 0.2 },
  postgres: { collect: 0.25, events: 0.25, webhook: 0.12 },
};

/** What bounds needs of a bench row (run.ts's Row has these and more). */
export interface BoundsRow {
  database: string;
  route?: string;
  driven?: 'bare' | 'http' | { callers: number };
  bareRps: number;
  result: { requestsPerSecond: number; total: number };
  cpu?: CpuSplit | null;
  consumed?: { calls: number; cpu: CpuSplit | null };
  /** Group commits of the run and the requests they carried. */
  writes?: { groups: number; items: number } | null;
}

const rowsPerCommit = (row: BoundsRow) => (row.writes && row.writes.groups > 0 ? row.writes.items / row.writes.groups : 0);

/**
 * The write-path run that stands for the HTTP row's write: the one whose commits held the fewest requests while
 * still holding at least as many as the HTTP row's did. A request costs less the more requests share its commit, so
 * that run's cost per request is at most what the HTTP row's write cost: a floor, never more. Without one, the run
 * with the largest commits (the cheapest write measured).
 */
function writeRunFor(http: BoundsRow, alone: BoundsRow[]): BoundsRow | undefined {
  const byGroup = [...alone].sort((a, b) => rowsPerCommit(a) - rowsPerCommit(b));
  return byGroup.find((row) => rowsPerCommit(row) >= rowsPerCommit(http)) ?? byGroup.at(-1);
}

const perRequestUs = (seconds: number, requests: number) => (requests > 0 ? (seconds * 1e6) / requests : NaN);
const cpuPerRequest = (row: BoundsRow) => (row.cpu ? perRequestUs(cpuSecondsOf(row.cpu, row.database === 'postgres'), row.result.total) : NaN);
const factsPerRequest = (row: BoundsRow) =>
  row.consumed?.cpu ? perRequestUs(cpuSecondsOf(row.consumed.cpu, row.database === 'postgres'), row.consumed.calls) : NaN;

/**
 * What bounds each event route, from one run. The budget is what a request may cost the whole machine (every
 * core busy) for the route to reach its goal: cores ÷ (goal × bare requests/s). The floor is what the same run
 * measured for work no route layer can avoid: the bare exchange (HTTP parse and answer, the load generator's
 * share), the write without HTTP in commits at least as large as the HTTP row's (writeRunFor), and consuming the
 * trigger facts it recorded. `write alone req/s` is the fastest write path without HTTP: with the bench's
 * connections as callers it bounds the route's rate. A floor above the budget means the goal is
 * out of reach on this machine however cheap the route layer; otherwise `room` is what the route layer may cost,
 * against what it costs now (the HTTP row less the bare exchange and the write).
 */
export function boundsTable(rows: BoundsRow[]): [string[], string[][]] {
  const header = [
    'route',
    'database',
    'goal',
    'goal req/s',
    'now req/s',
    'write alone req/s',
    'budget µs',
    'bare µs',
    'rows/commit: http, write',
    'write µs',
    'facts µs',
    'floor µs',
    'now µs',
    'verdict',
  ];
  const lines = rows.flatMap((http) => {
    const goal = http.route ? RATIO_GOALS[http.database]?.[http.route] : undefined;
    if (http.driven !== 'http' || goal === undefined || !http.cpu) return [];
    const alone = rows.filter((row) => row.route === http.route && row.database === http.database && typeof row.driven === 'object');
    const fastest = alone.reduce<BoundsRow | undefined>((best, row) => (!best || row.result.requestsPerSecond > best.result.requestsPerSecond ? row : best), undefined);
    const write = writeRunFor(http, alone);
    const bare = rows.find((row) => row.route === http.route && row.driven === 'bare');
    if (!bare || !write || !fastest) return [];
    const budget = (http.cpu.cores * 1e6) / (goal * http.bareRps);
    const bareUs = cpuPerRequest(bare);
    const writeUs = cpuPerRequest(write);
    const factsUs = factsPerRequest(write);
    const floor = bareUs + writeUs + (Number.isNaN(factsUs) ? 0 : factsUs);
    const nowUs = cpuPerRequest(http);
    const ratio = http.result.requestsPerSecond / http.bareRps;
    const verdict =
      ratio >= goal
        ? 'met'
        : floor >= budget
          ? `beyond: floor ${(floor - budget).toFixed(0)} µs over budget`
          : `room ${(budget - floor).toFixed(0)} µs; route layer ${(nowUs - bareUs - writeUs).toFixed(0)} µs`;
    return [
      [
        http.route!,
        http.database,
        goal.toFixed(2),
        (goal * http.bareRps).toFixed(0),
        http.result.requestsPerSecond.toFixed(0),
        fastest.result.requestsPerSecond.toFixed(0),
        budget.toFixed(0),
        bareUs.toFixed(0),
        `${rowsPerCommit(http).toFixed(1)}, ${rowsPerCommit(write).toFixed(1)}`,
        writeUs.toFixed(0),
        Number.isNaN(factsUs) ? '-' : factsUs.toFixed(0),
        floor.toFixed(0),
        nowUs.toFixed(0),
        verdict,
      ],
    ];
  });
  return [header, lines];
}
