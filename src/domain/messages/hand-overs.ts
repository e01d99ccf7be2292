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

/** The fewest captured messages a commit takes before the last: enough that a commit's cost is shared. */
const CAPTURE_GROUP = 100;

/**
 * Records captured messages (no relay: the render is the hand-over) while the rest still render: one commit at a
 * time, each taking every message that came since the last, once at least CAPTURE_GROUP are waiting (a floor:
 * with several batches writing at once, many small commits cost PostgreSQL more than they save). `finish` commits
 * the rest and rejects with the first commit's error (a message not recorded stays pending: its job runs again).
 * Not createGroupFlusher: that one answers each mail as its commit ends, since a relay's hand-over slot waits for
 * it; a captured message has no slot, so only the batch's end waits, and a commit may wait for company.
 */
export function createCaptureRecorder<T>(write: (group: T[]) => Promise<void>) {
  let waiting: T[] = [];
  let writing: Promise<void> | null = null;
  let failure: unknown = null;
  function commit(): void {
    const group = waiting;
    waiting = [];
    writing = write(group)
      .catch((error: unknown) => void (failure ??= error))
      .then(() => {
        writing = null;
        if (failure === null && waiting.length >= CAPTURE_GROUP) commit();
      });
  }
  return {
    add(item: T): void {
      waiting.push(item);
      if (writing === null && failure === null && waiting.length >= CAPTURE_GROUP) commit();
    },
    async finish(): Promise<void> {
      while (writing !== null) await writing;
      if (failure === null && waiting.length > 0) {
        commit();
        while (writing !== null) await writing;
      }
      if (failure !== null) throw failure;
    },
  };
}
