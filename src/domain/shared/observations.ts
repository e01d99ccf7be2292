/**
 * What a domain instance reports as it happens (a group commit's size, an SMTP hand-over's time), for whoever
 * watches: the server's metrics feed histograms from it (docs/operations.md, Metrics and status), so the domain
 * knows no metrics library. Nobody watching costs a loop over an empty set.
 */
export function createObservations<T>() {
  const watchers = new Set<(observed: T) => void>();
  return {
    report(observed: T): void {
      for (const watcher of watchers) watcher(observed);
    },
    /** Returns the function that stops watching. */
    watch(watcher: (observed: T) => void): () => void {
      watchers.add(watcher);
      return () => void watchers.delete(watcher);
    },
  };
}

export type Observations<T> = ReturnType<typeof createObservations<T>>;
