/**
 * What makes `npm run bench` fail: a step that threw (recorded as a failure), a server that did not stop
 * cleanly, or a load row with errors or non-2xx answers. The bench prints every row either way, then exits 1
 * when any of these holds, so a broken row cannot pass unnoticed in a log.
 */
export interface LoadOutcome {
  target: string;
  database: string;
  result: { non2xx: number; errors: number };
}

export function benchFailures(rows: LoadOutcome[], failures: string[]): string[] {
  const badRows = rows
    .filter((row) => row.result.non2xx > 0 || row.result.errors > 0)
    .map((row) => `${row.target} on ${row.database}: ${row.result.non2xx} non-2xx answers, ${row.result.errors} connection errors or timeouts`);
  return [...failures, ...badRows];
}
