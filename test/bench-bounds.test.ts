import { describe, expect, it } from 'vitest';
import { boundsTable, type BoundsRow } from '../bench/bounds.js';
import type { CpuSplit } from '../bench/cpu-split.js';

/** A row of `requests` over 10 s whose parts cost the given µs a request. */
function row(
  driven: BoundsRow['driven'],
  requests: number,
  us: { main?: number; postgres?: number; load?: number },
  extra: Partial<BoundsRow> = {},
): BoundsRow {
  const seconds = (perRequest = 0) => (perRequest * requests) / 1e6;
  const cpu: CpuSplit = {
    serverMain: seconds(us.main),
    serverOther: 0,
    postgres: seconds(us.postgres),
    loadGenerator: seconds(us.load),
    machineBusy: 0.8,
    cores: 2,
  };
  return { database: 'postgres', route: 'collect', driven, bareRps: 50_000, result: { requestsPerSecond: requests / 10, total: requests }, cpu, ...extra };
}

const facts = (calls: number, perRequestUs: number) => ({
  calls,
  cpu: { serverMain: (perRequestUs * calls) / 1e6, serverOther: 0, postgres: 0, loadGenerator: 0, machineBusy: 0.5, cores: 2 },
});

describe('npm run bench: what bounds each event route', () => {
  // Goal 0.25 of 50,000 requests/s on 2 cores: a budget of 2 s ÷ 12,500 = 160 µs a request.
  const bare = row('bare', 500_000, { main: 15, load: 15 }, { database: '-' });

  it('takes the write run whose commits are the smallest still as large as the HTTP row’s, and its facts', () => {
    const http = row('http', 70_000, { main: 80, postgres: 80, load: 20 }, { writes: { groups: 1000, items: 16_000 } });
    const fifty = row({ callers: 50 }, 130_000, { main: 20, postgres: 40 }, { writes: { groups: 1000, items: 50_000 }, consumed: facts(130_000, 20) });
    const twentyFive = row({ callers: 25 }, 90_000, { main: 30, postgres: 60 }, { writes: { groups: 1000, items: 25_000 }, consumed: facts(90_000, 25) });
    const [header, lines] = boundsTable([bare, http, fifty, twentyFive]);
    const cell = (name: string) => lines[0]![header.indexOf(name)];
    expect(lines).toHaveLength(1);
    expect(cell('goal req/s')).toBe('12500');
    expect(cell('budget µs')).toBe('160');
    expect(cell('write alone req/s')).toBe('13000');
    expect(cell('rows/commit: http, write')).toBe('16.0, 25.0');
    expect(cell('write µs')).toBe('90');
    expect(cell('facts µs')).toBe('25');
    // 30 (bare) + 90 (write in commits of 25) + 25 (facts) = 145: 15 µs left of 160.
    expect(cell('floor µs')).toBe('145');
    expect(cell('verdict')).toBe('room 15 µs; route layer 60 µs');
  });

  it('a floor above the budget is out of reach; without a run of large enough commits, the cheapest write stands', () => {
    const http = row('http', 70_000, { main: 80, postgres: 80, load: 20 }, { writes: { groups: 1000, items: 60_000 } });
    const fifty = row({ callers: 50 }, 130_000, { main: 60, postgres: 60 }, { writes: { groups: 1000, items: 50_000 }, consumed: facts(130_000, 20) });
    const twentyFive = row({ callers: 25 }, 90_000, { main: 90, postgres: 90 }, { writes: { groups: 1000, items: 25_000 } });
    const [header, lines] = boundsTable([bare, http, twentyFive, fifty]);
    expect(lines[0]![header.indexOf('write µs')]).toBe('120');
    // 30 + 120 + 20 = 170 > 160.
    expect(lines[0]![header.indexOf('verdict')]).toBe('beyond: floor 10 µs over budget');
  });

  it('a route at its goal is met, and rows without a goal, a bare row or a write run are left out', () => {
    const http = row('http', 130_000, { main: 60, postgres: 60, load: 20 }, { writes: { groups: 1000, items: 25_000 } });
    const alone = row({ callers: 25 }, 90_000, { main: 90, postgres: 90 }, { writes: { groups: 1000, items: 25_000 } });
    expect(boundsTable([bare, http, alone])[1][0]!.at(-1)).toBe('met');
    expect(boundsTable([http, alone])[1]).toEqual([]);
    expect(boundsTable([bare, http])[1]).toEqual([]);
    expect(boundsTable([bare, { ...http, route: 'tracking' }, alone])[1]).toEqual([]);
  });
});
