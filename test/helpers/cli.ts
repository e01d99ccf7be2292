import { execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';

export const EMK_BIN = resolve(import.meta.dirname, '../../bin/emk');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built `emk` (bin/emk → dist/) without a terminal. */
export function runEmk(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [EMK_BIN, ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? ((error as { code?: number }).code ?? 1) : 0;
        done({ code: typeof code === 'number' ? code : 1, stdout, stderr });
      },
    );
  });
}

/** Runs `emk` under a pseudo-terminal (util-linux `script`), typing `keystrokes` one entry at a time. */
export function runEmkInTerminal(args: string[], keystrokes: string[]): Promise<CliResult> {
  return new Promise((done) => {
    const command = [process.execPath, EMK_BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const child = spawn('script', ['-qec', command, '/dev/null'], { env: { ...process.env, TERM: 'xterm', COLUMNS: '100' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    let i = 0;
    const typeNext = () => {
      if (i >= keystrokes.length) return;
      child.stdin.write(keystrokes[i++]!);
      setTimeout(typeNext, 700);
    };
    setTimeout(typeNext, 1500);
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}
