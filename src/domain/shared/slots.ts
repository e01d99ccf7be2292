/**
 * At most `size` pieces of work at once; the rest wait their turn in arrival order. For work that holds a
 * scarce shared resource for its whole run (a thread of libuv's pool).
 */
export function createSlots(size: number) {
  let running = 0;
  const waiting: Array<() => void> = [];
  const release = () => {
    running--;
    waiting.shift()?.();
  };
  return {
    async run<T>(work: () => Promise<T>): Promise<T> {
      if (running >= size) await new Promise<void>((resolve) => waiting.push(resolve));
      running++;
      try {
        return await work();
      } finally {
        release();
      }
    },
    /** How many run now (tests). */
    running: () => running,
  };
}
