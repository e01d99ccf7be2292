/** mulberry32: a small seeded PRNG, so a seed names one operation sequence exactly. */
export function seededRandom(seed: number) {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    /** An integer in [min, max]. */
    int,
    chance: (p: number) => next() < p,
    pick<T>(list: readonly T[]): T {
      if (list.length === 0) throw new Error('pick from an empty list');
      return list[Math.floor(next() * list.length)]!;
    },
    /** A key of `weights`, chosen in proportion to its weight. */
    weighted<K extends string>(weights: Record<K, number>): K {
      const entries = Object.entries(weights) as Array<[K, number]>;
      let roll = next() * entries.reduce((sum, [, w]) => sum + w, 0);
      for (const [key, weight] of entries) if ((roll -= weight) < 0) return key;
      return entries[entries.length - 1]![0];
    },
  };
}

export type Random = ReturnType<typeof seededRandom>;
