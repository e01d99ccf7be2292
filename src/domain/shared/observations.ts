/**
 * What a domain instance reports as it happens (a group commit's size, an SMTP hand-over's time), for whoever
 * watches: the server's metrics feed histograms from it (docs/operations.md, Metrics and status), so the domain
 * knows no metrics library. Nobody watching costs a loop over an empty set.
 */
export function createObservations<T>() {
  const watchers = new Set<(observed: T) => void>();
  return {
    /**
     * Never throws: a watcher's failure must not become the reporter's (a committed group retried as failed, a
     * mail the relay took treated as not sent). It is printed as a process warning instead.
     */
    report(observed: T): void {
      for (const watcher of watchers) {
        try {
          watcher(observed);
        } catch (error) {
          process.emitWarning(`a watcher of an observation failed: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
    },
    /** Returns the function that stops watching. */
    watch(watcher: (observed: T) => void): () => void {
      watchers.add(watcher);
      return () => void watchers.delete(watcher);
    },
  };
}

export type Observations<T> = ReturnType<typeof createObservations<T>>;
