import { createReadStream } from 'node:fs';
import { extname } from 'node:path';
import { createInterface } from 'node:readline';
import { parse } from 'csv-parse';
import { UsageError, ValidationError } from '../../domain/errors.js';
import type { ExportRow } from '../../domain/shared/export-file.js';

/**
 * One input row: the line an editor shows it on (the header is line 1; a CSV record that spans lines is at its
 * first line; blank lines count) and the record, or why it is unreadable.
 */
export type InputRow = { line: number; record: Record<string, unknown> } | { line: number; error: string };

export type InputFormat = 'csv' | 'jsonl';

/** Bytes a reader has read of its file so far, for the progress line (a second pass over the file starts again). */
export interface ByteMeter {
  read: number;
}

/** A file's read stream, counting into `meter` as it goes. */
function openCounted(path: string, meter?: ByteMeter) {
  const stream = createReadStream(path);
  if (meter) stream.on('data', () => (meter.read = stream.bytesRead));
  return stream;
}

export function formatOf(path: string): InputFormat {
  const ext = extname(path).toLowerCase();
  if (ext === '.csv') return 'csv';
  if (ext === '.jsonl' || ext === '.ndjson' || ext === '.json') return 'jsonl';
  throw new UsageError(`cannot tell the format of ${path}: use a .csv or .jsonl file`);
}

/**
 * CSV conventions (docs/cli.md): a column holding JSON (`properties`, `items`, …) is parsed when its text is
 * a JSON object or array; `a.b` columns nest (`properties.color` → properties.color). Everything else stays
 * text; each command converts the fields it knows.
 */
export function nestCsvRecord(flat: Record<string, string>): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (const [column, raw] of Object.entries(flat)) {
    if (raw === '' || raw === undefined) continue;
    let value: unknown = raw;
    const trimmed = raw.trim();
    if ((trimmed.startsWith('{') && trimmed.endsWith('}')) || (trimmed.startsWith('[') && trimmed.endsWith(']'))) {
      try {
        value = JSON.parse(trimmed);
      } catch {
        value = raw;
      }
    }
    const path = column.split('.');
    let target = record;
    for (const key of path.slice(0, -1)) {
      const next = target[key];
      if (!next || typeof next !== 'object' || Array.isArray(next)) target[key] = {};
      target = target[key] as Record<string, unknown>;
    }
    target[path[path.length - 1]!] = value;
  }
  return record;
}

/** Line breaks in a piece of CSV text: `\r\n`, `\n` and a lone `\r` each end one line, as an editor counts them. */
function lineBreaks(text: string, leadingOnly = false): number {
  let breaks = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 10) breaks++;
    else if (code === 13) {
      breaks++;
      if (text.charCodeAt(i + 1) === 10) i++;
    } else if (leadingOnly) break;
  }
  return breaks;
}

/**
 * Streams a CSV file's data rows as text cells by header name (trimmed), each at the line an editor shows it on. Lines are counted from each record's
 * raw text (which holds the blank lines skipped before it), so a quoted field spanning lines moves the count on
 * by the lines it spans.
 */
export async function* readCsvRows(path: string, meter?: ByteMeter): AsyncGenerator<ExportRow> {
  const parser = openCounted(path, meter).pipe(parse({ bom: true, raw: true, relax_column_count: true, skip_empty_lines: true }));
  let header: string[] | null = null;
  let linesBefore = 0;
  for await (const { record, raw } of csvRecords(parser)) {
    const line = linesBefore + lineBreaks(raw, true) + 1;
    linesBefore += lineBreaks(raw);
    if (header === null) {
      header = record.map((h) => h.trim());
      continue;
    }
    const cells: Record<string, string> = {};
    for (let i = 0; i < Math.min(header.length, record.length); i++) cells[header[i]!] = record[i]!;
    yield { line, cells };
  }
}

/**
 * The parser's records; a file it cannot read on (an unclosed quote) stops the import with the line the parser
 * stopped at, since nothing after that line can be told apart.
 */
async function* csvRecords(parser: AsyncIterable<unknown>): AsyncGenerator<{ record: string[]; raw: string }> {
  try {
    yield* parser as AsyncIterable<{ record: string[]; raw: string }>;
  } catch (error) {
    const fault = error as { code?: unknown; lines?: unknown; message?: unknown };
    if (typeof fault.code !== 'string' || !fault.code.startsWith('CSV_')) throw error;
    const at = typeof fault.lines === 'number' ? `line ${fault.lines}: ` : '';
    throw new ValidationError(`the file is not valid CSV at ${at}${String(fault.message)}`);
  }
}

/** Streams a CSV or JSON Lines file row by row: memory stays flat whatever the file's size. */
export async function* readRecords(path: string, meter?: ByteMeter, format: InputFormat = formatOf(path)): AsyncGenerator<InputRow> {
  if (format === 'csv') {
    for await (const { line, cells } of readCsvRows(path, meter)) yield { line, record: nestCsvRecord(cells) };
    return;
  }
  const lines = createInterface({ input: openCounted(path, meter), crlfDelay: Infinity });
  let line = 0;
  for await (const text of lines) {
    line++;
    if (text.trim() === '') continue;
    try {
      const value: unknown = JSON.parse(text);
      if (!value || typeof value !== 'object' || Array.isArray(value)) yield { line, error: 'line is not a JSON object' };
      else yield { line, record: value as Record<string, unknown> };
    } catch {
      yield { line, error: 'line is not valid JSON' };
    }
  }
}

/** Groups a stream into arrays of `size` (the last may be shorter). */
export async function* chunksOf<T>(source: AsyncIterable<T>, size: number): AsyncGenerator<T[]> {
  let chunk: T[] = [];
  for await (const item of source) {
    chunk.push(item);
    if (chunk.length >= size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}
