import { createHash } from 'node:crypto';

/**
 * A recipient's place in a campaign's A/B test: the first 48 bits of SHA-256 of `<campaign id>:<contact id>`.
 * It depends on the two ids alone, so it is the same on every run, process and database.
 */
export function splitKey(campaignId: string, contactId: string): number {
  return parseInt(createHash('sha256').update(`${campaignId}:${contactId}`).digest('hex').slice(0, 12), 16);
}

/**
 * An A/B test's group (docs/email.md, A/B tests): the audience ordered by split key (then contact id), its first
 * `round(share × audience)` (all of it at share 1) in the test, dealt to the variants in turn (so their sizes
 * differ by one at most) and cut into batches of `batchSize` in that order.
 */
export function splitTestGroup<T extends { id: string }>(
  campaignId: string,
  audience: T[],
  args: { testShare: number; variants: number; batchSize: number },
): Array<T & { variant: number; batch: number }> {
  const size = args.testShare >= 1 ? audience.length : Math.round(args.testShare * audience.length);
  return audience
    .map((member) => ({ member, key: splitKey(campaignId, member.id) }))
    .sort((a, b) => a.key - b.key || (a.member.id < b.member.id ? -1 : a.member.id > b.member.id ? 1 : 0))
    .slice(0, size)
    .map(({ member }, rank) => ({ ...member, variant: rank % args.variants, batch: Math.floor(rank / args.batchSize) }));
}

/** The winner: the variant with the highest value of the metric; a tie goes to the lowest index. */
export function pickWinner(values: number[]): number {
  let winner = 0;
  for (const [index, value] of values.entries()) if (value > values[winner]!) winner = index;
  return winner;
}
