import { statSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { EmkError } from '../../domain/errors.js';
import { concurrencyFlag, inputFile, maxErrorsFlag } from '../options.js';
import { plural } from '../plural.js';
import { startProgress, type ProgressState } from '../progress.js';
import type { CommandContext } from '../run-command.js';
import { readRecords, type ByteMeter } from './record-reader.js';
import { runChunked, sortRows, type ChunkedSummary, type ChunkOutcome, type ImportRow, type RowError } from './run-chunked.js';

/** `--max-errors`: the refused rows an import tolerates before it stops (absent: no limit). */
export function importLimitsOption(command: Command): Command {
  return command.option('--max-errors <n>', 'stop reading after more than N refused rows (exit 1; committed chunks stay)');
}

/**
 * What every file import (`emk events import|correct`, `emk contacts import`, `emk products import`, `emk sync-orders`)
 * shares: a file streamed in chunks of 1000 rows through one batch domain function (the endpoint's), the progress
 * line (bytes read of the file's size, rows/s, time left), rejected rows with their line (and record), an optional
 * `--errors` CSV, `--max-errors`, and Ctrl-C that stops reading while the chunks in flight commit. An import that
 * refused every row, or more than `--max-errors`, still prints its summary and then fails (exit 1).
 */
export async function runBatchFile(
  context: CommandContext,
  /** `rows`: the file as an export format reads it (checked by the caller); by default its CSV or JSON Lines rows. */
  options: {
    file: string;
    concurrency?: string | undefined;
    errors?: string | undefined;
    maxErrors?: string | undefined;
    label: string;
    rows?: (meter: ByteMeter) => AsyncIterable<ImportRow>;
  },
  handleBatch: (records: Record<string, unknown>[]) => Promise<{ counts: Record<string, number>; errors: Array<{ index: number; error: string }> }>,
): Promise<{ summary: ChunkedSummary; interrupted: boolean }> {
  const file = inputFile(options.file);
  const concurrency = concurrencyFlag(options.concurrency ?? '4');
  const maxErrors = options.maxErrors === undefined ? undefined : maxErrorsFlag(options.maxErrors);
  const meter: ByteMeter = { read: 0 };
  const rows = options.rows ? options.rows(meter) : readRecords(file, meter);
  const size = statSync(file).size;
  const label = `${options.label} ${options.file}`;
  const progress = startProgress(context.interactive, label);
  const stateOf = (s: ChunkedSummary): ProgressState => ({
    rows: s.rows,
    bytes: { read: meter.read, size },
    note: s.errors.length > 0 ? `${s.errors.length} refused` : undefined,
  });
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  let committed: ChunkedSummary = { rows: 0, counts: {}, errors: [] };
  try {
    const summary = await runChunked(rows, {
      chunkSize: 1000,
      concurrency,
      signal: stop.signal,
      maxErrors,
      handle: async (chunk): Promise<ChunkOutcome> => {
        const { readable, errors, skipped } = sortRows(chunk);
        const result = await handleBatch(readable.map((r) => r.record));
        for (const e of result.errors) {
          const { line, record } = readable[e.index]!;
          errors.push({ line, error: e.error, record });
        }
        // Rows an export format leaves out on purpose (a draft product): `left_out`.
        return { counts: skipped > 0 ? { ...result.counts, left_out: skipped } : result.counts, errors };
      },
      onProgress: (s) => {
        committed = s;
        progress.update(stateOf(s));
      },
    });
    // The last line names the work: a file read within the spinner's first frame (80 ms) never showed the label.
    progress.done(`${label} ${stop.signal.aborted ? 'interrupted' : summary.stoppedByErrors ? 'stopped' : 'done'}`, stateOf(summary));
    if (options.errors) writeErrorsCsv(options.errors, summary.errors);
    if (stop.signal.aborted) process.exitCode = 130;
    else judge(context, summary, maxErrors);
    return { summary, interrupted: stop.signal.aborted };
  } catch (error) {
    progress.done(`${label} stopped`);
    if (options.errors) writeErrorsCsv(options.errors, committed.errors);
    const reason = error instanceof Error ? error.message : String(error);
    const told = `stopped after ${plural(committed.rows, 'row')} in committed chunks (re-running is safe): ${reason}`;
    // A domain error (a file that is not CSV) is told as it is; anything else keeps its text for EMK_DEBUG only.
    throw error instanceof EmkError ? new EmkError(told, error.code, error.httpStatus, error.exitCode) : new Error(told);
  } finally {
    process.off('SIGINT', onSignal);
  }
}

/** Exit 1 after the summary: every row refused, or more than `--max-errors`. */
function judge(context: CommandContext, summary: ChunkedSummary, maxErrors: number | undefined): void {
  const refused = summary.errors.length;
  if (maxErrors !== undefined && refused > maxErrors) {
    const where = summary.stoppedByErrors ? `stopped after ${plural(summary.rows, 'row')} ` : `${plural(summary.rows, 'row')} read `;
    context.fail(`${where}with ${plural(refused, 'row')} refused, more than --max-errors ${maxErrors}; the rows of committed chunks stay committed (re-running is safe)`);
  } else if (summary.rows > 0 && refused === summary.rows) {
    context.fail(refused === 1 ? 'the only row was refused' : `all ${refused} rows were refused`);
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
