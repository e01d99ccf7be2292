import { createHash } from 'node:crypto';

/**
 * A recipient's place in a campaign's A/B test: the first 48 bits of SHA-256 of `<campaign id>:<contact id>`.
 * It depends on the two ids alone, so it is the same on every run, process and database. The test group is the
 * audience in key order (then contact id), its first `round(share × audience)`, dealt to the variants in turn
 * (docs/email.md, A/B tests): the database orders it (messages/message-store.ts, `insertCampaignTestGroup`).
 */
export function splitKey(campaignId: string, contactId: string): number {
  return parseInt(createHash('sha256').update(`${campaignId}:${contactId}`).digest('hex').slice(0, 12), 16);
}

/** The winner: the variant with the highest value of the metric; a tie goes to the lowest index. */
export function pickWinner(values: number[]): number {
  let winner = 0;
  for (const [index, value] of values.entries()) if (value > values[winner]!) winner = index;
  return winner;
}
