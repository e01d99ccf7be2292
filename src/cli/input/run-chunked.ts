import type { ExportRecord } from '../../domain/shared/export-file.js';
import { chunksOf } from './record-reader.js';

/**
 * A row as an import reads it, at its file line: a record, a row refused before the domain sees it (unreadable,
 * or an export record that cannot be one), or one an export format leaves out on purpose (a draft product).
 */
export type ImportRow = ExportRecord;

/** What one chunk did: counters to add up, and the rows it refused with their reasons. */
export interface ChunkOutcome {
  counts: Record<string, number>;
  errors: RowError[];
}

export interface RowError {
  line: number;
  error: string;
  record?: Record<string, unknown>;
}

export interface ChunkedSummary {
  rows: number;
  counts: Record<string, number>;
  errors: RowError[];
  /** Reading stopped before the end of the file because more rows than `maxErrors` were refused. */
  stoppedByErrors?: boolean;
}

/** A row the domain function is handed, at its file line. */
export interface ReadableRow {
  line: number;
  record: Record<string, unknown>;
}

/** A chunk's rows sorted: the records for the domain function, the rows refused already, how many were skipped. */
export function sortRows(rows: ImportRow[]): { readable: ReadableRow[]; errors: RowError[]; skipped: number } {
  const readable: ReadableRow[] = [];
  const errors: RowError[] = [];
  let skipped = 0;
  for (const row of rows) {
    if ('record' in row) readable.push(row);
    else if ('error' in row) errors.push({ line: row.line, error: row.error });
    else skipped++;
  }
  return { readable, errors, skipped };
}

/**
 * Streams a file's rows through a domain function in chunks, `concurrency` chunks in flight at most: the reader
 * waits for a free place before reading on, so memory stays bounded (one loop bounds both; no limiter library is
 * needed). Each chunk commits on its own: a crash loses no committed chunk.
 */
export async function runChunked(
  source: AsyncIterable<ImportRow>,
  options: {
    chunkSize?: number;
    concurrency?: number;
    handle: (rows: ImportRow[]) => Promise<ChunkOutcome>;
    onProgress?: (summary: ChunkedSummary) => void;
    /** Stops reading when aborted (Ctrl-C): chunks in flight still commit, the summary says how far it got. */
    signal?: AbortSignal;
    /** Stops reading (as Ctrl-C does) once more rows than this were refused (`--max-errors`). */
    maxErrors?: number;
  },
): Promise<ChunkedSummary> {
  const { chunkSize = 1000, concurrency = 4, handle, onProgress, signal, maxErrors = Infinity } = options;
  const summary: ChunkedSummary = { rows: 0, counts: {}, errors: [] };
  const inFlight = new Set<Promise<void>>();
  let failure: unknown = null;

  for await (const rows of chunksOf(source, chunkSize)) {
    if (failure || signal?.aborted) break;
    if (summary.errors.length > maxErrors) {
      summary.stoppedByErrors = true;
      break;
    }
    const task = (async () => {
      const outcome = await handle(rows);
      summary.rows += rows.length;
      for (const [key, n] of Object.entries(outcome.counts)) summary.counts[key] = (summary.counts[key] ?? 0) + n;
      summary.errors.push(...outcome.errors);
      onProgress?.(summary);
    })().catch((error: unknown) => {
      failure ??= error;
    });
    inFlight.add(task);
    void task.finally(() => inFlight.delete(task));
    if (inFlight.size >= concurrency) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  if (failure) throw failure;
  summary.errors.sort((a, b) => a.line - b.line);
  return summary;
}

/** Refused rows for a person: the first `shown`, then how many more (`--json` output lists them all). */
export function describeRowErrors(errors: ReadonlyArray<{ line: number; error: string }>, shown = 20): string[] {
  return [
    ...errors.slice(0, shown).map((e) => `  line ${e.line}: ${e.error}`),
    ...(errors.length > shown ? [`  … and ${errors.length - shown} more (use --json for all)`] : []),
  ];
}
