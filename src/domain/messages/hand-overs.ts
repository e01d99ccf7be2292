/**
 * What bounds the mails a crash hands to the relay twice (docs/email.md, Each mail once): a mail counts from the
 * moment it is handed to the relay until its outcome is committed, and a process holds at most `size` such mails
 * across all the batches it sends at once. What the wait for the commit costs: docs/performance.md (issue 33).
 */
export function createHandOverSlots(size: number) {
  let free = Math.max(1, size);
  const waiting: Array<() => void> = [];
  return {
    /** Resolves when a slot is free (first come, first served); call the returned function once to give it back. */
    async take(): Promise<() => void> {
      if (free > 0) free--;
      else await new Promise<void>((resolve) => waiting.push(resolve));
      let given = false;
      return () => {
        if (given) return;
        given = true;
        const next = waiting.shift();
        if (next) next();
        else free++;
      };
    },
  };
}

export type HandOverSlots = ReturnType<typeof createHandOverSlots>;

/**
 * Writes items as they come: whatever arrived since its last write, in one write (one commit), started as soon
 * as the previous one ends; no timer, so nothing waits on one a crash could forget. `add` resolves once its item
 * is committed and rejects with the write's error (the item is then simply not recorded).
 */
export function createGroupFlusher<T>(write: (items: T[]) => Promise<void>) {
  let waiting: Array<{ item: T; done: () => void; fail: (error: unknown) => void }> = [];
  let writing = false;
  async function flush(): Promise<void> {
    writing = true;
    while (waiting.length > 0) {
      const group = waiting;
      waiting = [];
      try {
        await write(group.map((w) => w.item));
        for (const w of group) w.done();
      } catch (error) {
        for (const w of group) w.fail(error);
      }
    }
    writing = false;
  }
  return {
    add(item: T): Promise<void> {
      return new Promise<void>((done, fail) => {
        waiting.push({ item, done, fail });
        if (!writing) void flush();
      });
    },
  };
}

/** Captured messages committed together: enough that a commit's cost is shared, few enough to start early. */
const CAPTURE_GROUP = 100;

/**
 * Records captured messages (no relay: the render is the hand-over) in groups of CAPTURE_GROUP as they come, one
 * commit at a time, so the database writes one group while the threads render the next; `finish` writes the
 * rest and rejects with the first write's error (a message not recorded stays pending: its job runs again).
 * Groups of a fixed size, not whatever came during the last commit: with several batches writing at once, small
 * groups cost PostgreSQL a commit each (docs/email.md, What it costs).
 */
export function createCaptureRecorder<T>(write: (group: T[]) => Promise<void>) {
  let group: T[] = [];
  let writing: Promise<void> = Promise.resolve();
  let failure: unknown = null;
  const commit = () => {
    const items = group;
    group = [];
    writing = writing.then(() => (failure === null ? write(items) : undefined)).catch((error: unknown) => void (failure ??= error));
  };
  return {
    add(item: T): void {
      group.push(item);
      if (group.length >= CAPTURE_GROUP) commit();
    },
    async finish(): Promise<void> {
      if (group.length > 0) commit();
      await writing;
      if (failure !== null) throw failure;
    },
  };
}
