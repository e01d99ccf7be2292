import { writeFileSync } from 'node:fs';
import { EmkError } from '../../domain/errors.js';
import { concurrencyFlag, inputFile } from '../options.js';
import { startProgress } from '../progress.js';
import type { CommandContext } from '../run-command.js';
import { readRecords } from './record-reader.js';
import { runChunked, sortRows, type ChunkedSummary, type ChunkOutcome, type ImportRow, type RowError } from './run-chunked.js';

/**
 * What the batch imports (`emk events import|correct`, `emk contacts import`) share: a file streamed in chunks
 * of 1000 rows through one batch domain function (the endpoint's), rejected rows with their line (and record),
 * an optional `--errors` CSV, and Ctrl-C that stops reading while the chunks in flight commit.
 */
export async function runBatchFile(
  context: CommandContext,
  /** `rows`: the file as an export format reads it (checked by the caller); by default its CSV or JSON Lines rows. */
  options: { file: string; concurrency: string; errors?: string | undefined; label: string; rows?: AsyncIterable<ImportRow> },
  handleBatch: (records: Record<string, unknown>[]) => Promise<{ counts: Record<string, number>; errors: Array<{ index: number; error: string }> }>,
): Promise<{ summary: ChunkedSummary; interrupted: boolean }> {
  const rows = options.rows ?? readRecords(inputFile(options.file));
  const concurrency = concurrencyFlag(options.concurrency);
  const progress = startProgress(context.interactive, `${options.label} ${options.file}`);
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  let committed: ChunkedSummary = { rows: 0, counts: {}, errors: [] };
  try {
    const summary = await runChunked(rows, {
      chunkSize: 1000,
      concurrency,
      signal: stop.signal,
      handle: async (chunk): Promise<ChunkOutcome> => {
        const { readable, errors } = sortRows(chunk);
        const result = await handleBatch(readable.map((r) => r.record));
        for (const e of result.errors) {
          const { line, record } = readable[e.index]!;
          errors.push({ line, error: e.error, record });
        }
        return { counts: result.counts, errors };
      },
      onProgress: (s) => {
        committed = s;
        progress.update(`${s.rows} rows committed, ${s.errors.length} rejected`);
      },
    });
    progress.done(`${summary.rows} rows read`);
    if (options.errors) writeErrorsCsv(options.errors, summary.errors);
    if (stop.signal.aborted) process.exitCode = 130;
    return { summary, interrupted: stop.signal.aborted };
  } catch (error) {
    progress.done('stopped');
    if (options.errors) writeErrorsCsv(options.errors, committed.errors);
    const reason = error instanceof Error ? error.message : String(error);
    const told = `stopped after ${committed.rows} rows in committed chunks (re-running is safe): ${reason}`;
    // A domain error (a file that is not CSV) is told as it is; anything else keeps its text for EMK_DEBUG only.
    throw error instanceof EmkError ? new EmkError(told, error.code, error.httpStatus, error.exitCode) : new Error(told);
  } finally {
    process.off('SIGINT', onSignal);
  }
}

const csvCell = (value: unknown): string => {
  const text = value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

/** Rejected rows: `line,email,event_name,error`, in line order. */
export function writeErrorsCsv(path: string, errors: RowError[]): void {
  const lines = ['line,email,event_name,error'];
  for (const e of [...errors].sort((a, b) => a.line - b.line)) {
    lines.push([e.line, e.record?.email, e.record?.event_name, e.error].map(csvCell).join(','));
  }
  writeFileSync(path, `${lines.join('\n')}\n`);
}

/** `--json` errors: line and reason only. */
export const lineErrors = (errors: RowError[]) => errors.map(({ line, error }) => ({ line, error }));
