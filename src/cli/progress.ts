import * as prompts from '@clack/prompts';
import { noun } from './plural.js';

const counts = new Intl.NumberFormat('en-US');
/** A count in the progress line: `12,345`. */
const formatCount = (count: number): string => counts.format(count);

/** How far a long job is: what the progress line shows (docs/cli.md, Progress). */
export interface ProgressState {
  /** Rows (orders, products, …) done so far: the rate counts these. */
  rows: number;
  /** Of how many rows, when the job knows (copy-data counts them first). */
  totalRows?: number;
  /** A streamed file: bytes read of its size (its share done, when the rows' total is unknown). */
  bytes?: { read: number; size: number };
  /** What else to say, e.g. `3 refused`. */
  note?: string;
}

/** 1536 → `1.5 KB`; binary multiples, as file managers show sizes. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** A time left, rounded for a person: `< 1 s`, `42 s`, `3 min 5 s`, `2 h 10 min`. */
export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 1) return '< 1 s';
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/**
 * The progress line: what is done of what (rows of the total, else bytes read of the file's size, with the share),
 * the rate in rows/s and the time left at that pace, e.g.
 * `4,000 of 10,000 rows (40 %), 2,000 rows/s, about 3 s left` or `4,000 rows, 1.2 MB of 3.0 MB (40 %), …`.
 * No rate before any time has passed, no time left before anything is done.
 */
export function formatProgress(state: ProgressState, elapsedMs: number): string {
  const parts: string[] = [];
  let share: number | null = null;
  if (state.totalRows !== undefined) {
    share = state.totalRows === 0 ? 1 : state.rows / state.totalRows;
    parts.push(`${formatCount(state.rows)} of ${formatCount(state.totalRows)} ${noun(state.totalRows, 'row')} (${Math.floor(share * 100)} %)`);
  } else {
    parts.push(`${formatCount(state.rows)} ${noun(state.rows, 'row')}`);
    if (state.bytes) {
      share = state.bytes.size === 0 ? 1 : Math.min(1, state.bytes.read / state.bytes.size);
      parts.push(`${formatBytes(state.bytes.read)} of ${formatBytes(state.bytes.size)} (${Math.floor(share * 100)} %)`);
    }
  }
  if (elapsedMs > 0) parts.push(`${formatCount(Math.round((state.rows * 1000) / elapsedMs))} rows/s`);
  if (share !== null && share > 0 && share < 1) parts.push(`about ${formatDuration((elapsedMs * (1 - share)) / share)} left`);
  if (state.note) parts.push(state.note);
  return parts.join(', ');
}

export interface Progress {
  update(state: ProgressState): void;
  /** The last line: `text`, then what was done and at what rate when a state is given. */
  done(text: string, state?: ProgressState): void;
}

const SILENT: Progress = { update: () => {}, done: () => {} };

/**
 * A spinner with the progress line on stderr for a person at a terminal (stdin, stdout and stderr TTYs); silent
 * with --json or without a terminal (CONTRACT §2). Redrawn at most ten times a second.
 */
export function startProgress(interactive: boolean, label: string, now: () => number = Date.now): Progress {
  if (!interactive || !process.stderr.isTTY) return SILENT;
  const spinner = prompts.spinner({ output: process.stderr });
  spinner.start(label);
  const started = now();
  let last = 0;
  return {
    update(state) {
      const at = now();
      // Redrawing on every chunk would cost more than the work at high rates.
      if (at - last < 100) return;
      last = at;
      spinner.message(`${label}: ${formatProgress(state, at - started)}`);
    },
    done(text, state) {
      spinner.stop(state ? `${text}: ${formatProgress(state, now() - started)}` : text);
    },
  };
}
