import { createReadStream } from 'node:fs';
import { extname } from 'node:path';
import { createInterface } from 'node:readline';
import { parse } from 'csv-parse';
import { UsageError } from '../../domain/errors.js';

/** One input row: its 1-based line (data rows, after any header) and the record, or why it is unreadable. */
export type InputRow = { line: number; record: Record<string, unknown> } | { line: number; error: string };

export type InputFormat = 'csv' | 'jsonl';

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

/** Streams a CSV or JSON Lines file row by row: memory stays flat whatever the file's size. */
export async function* readRecords(path: string, format: InputFormat = formatOf(path)): AsyncGenerator<InputRow> {
  if (format === 'csv') {
    const parser = createReadStream(path).pipe(
      parse({ columns: (header: string[]) => header.map((h) => h.trim()), bom: true, relax_column_count: true, skip_empty_lines: true }),
    );
    let line = 0;
    for await (const flat of parser as AsyncIterable<Record<string, string>>) {
      line++;
      yield { line, record: nestCsvRecord(flat) };
    }
    return;
  }
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
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
