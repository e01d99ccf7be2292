import { execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';

export const EMK_BIN = resolve(import.meta.dirname, '../../bin/emk');

/** The environment of an `emk serve` child under a test's load: no Collect rate limits, warnings only. */
export const LOAD_TEST_SERVER_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  EMK_LIMIT_COLLECT_PER_IP: '0',
  EMK_LIMIT_COLLECT_PER_SITE: '0',
  EMK_LIMIT_COLLECT_PER_IP_SITE: '0',
  EMK_LOG_LEVEL: 'warn',
};

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

/** Runs `emk` under a pseudo-terminal (util-linux `script`), answering each prompt as it appears. */
export function runEmkInTerminal(args: string[], answers: Array<[prompt: string, keys: string]>): Promise<CliResult> {
  return new Promise((done) => {
    const command = [process.execPath, EMK_BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const child = spawn('script', ['-qec', command, '/dev/null'], { env: { ...process.env, TERM: 'xterm', COLUMNS: '100' } });
    let stdout = '';
    let stderr = '';
    // Each answer is typed once its prompt is on screen (line breaks and colour codes removed), however slow
    // the machine: keys typed before the prompt listens would be lost.
    let next = 0;
    let seen = 0;
    const answerShownPrompt = () => {
      const screen = stdout.replace(/[\r\n]/g, '').replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
      const prompt = answers[next]?.[0];
      if (prompt === undefined) return;
      const at = screen.indexOf(prompt, seen);
      if (at < 0) return;
      seen = at + prompt.length;
      // A moment for the prompt to start reading keys after drawing itself.
      const keys = answers[next++]![1];
      setTimeout(() => {
        child.stdin.write(keys);
        answerShownPrompt();
      }, 200);
    };
    child.stdout.on('data', (d) => {
      stdout += d;
      answerShownPrompt();
    });
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}
