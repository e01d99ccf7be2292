import * as prompts from '@clack/prompts';

export interface Progress {
  update(message: string): void;
  done(message: string): void;
}

const SILENT: Progress = { update: () => {}, done: () => {} };

/** A spinner with counts on stderr for a person at a terminal; silent with --json or without a TTY. */
export function startProgress(interactive: boolean, message: string): Progress {
  if (!interactive || !process.stderr.isTTY) return SILENT;
  const spinner = prompts.spinner({ output: process.stderr });
  spinner.start(message);
  let last = 0;
  return {
    update(text) {
      const now = Date.now();
      // Redrawing on every chunk would cost more than the work at high rates.
      if (now - last < 100) return;
      last = now;
      spinner.message(text);
    },
    done(text) {
      spinner.stop(text);
    },
  };
}
