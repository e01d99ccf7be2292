import { describe, expect, it } from 'vitest';
import { createTrackingTokenSigner, signTrackingToken, verifyTrackingToken, type TrackingClaims } from '../src/domain/tracking/tracking-token.js';
import { uuidv7 } from '../src/domain/shared/ids.js';

describe('tracking tokens (no database)', () => {
  const secret = 'a-workspace-secret';
  const workspaceId = uuidv7();

  it('a send\'s signer makes the very tokens a one-off signing does, whatever order its subjects come in', () => {
    const [a, b, contact] = [uuidv7(), uuidv7(), 'not-a-uuid-contact'];
    const claims: TrackingClaims[] = [
      { kind: 'click', workspaceId, subjectId: a, url: 'https://shop.test/p/1' },
      { kind: 'click', workspaceId, subjectId: a, url: 'https://shop.test/p/2?x=1&y=é' },
      { kind: 'open', workspaceId, subjectId: a, url: null },
      { kind: 'click', workspaceId, subjectId: b, url: 'https://shop.test/p/1' },
      { kind: 'consent', workspaceId, subjectId: contact, url: null, messageId: b },
      { kind: 'click', workspaceId, subjectId: a, url: 'https://shop.test/p/3' },
      { kind: 'consent', workspaceId, subjectId: contact, url: null, messageId: null },
    ];
    const sign = createTrackingTokenSigner(secret, workspaceId);
    const tokens = claims.map((c) => sign(c));
    expect(tokens).toEqual(claims.map((c) => signTrackingToken(secret, c)));
    expect(new Set(tokens).size).toBe(claims.length);
    // Each verifies as what it was made for, its subject included.
    for (const [i, c] of claims.entries()) {
      const { workspaceId: ws, subjectId, url, kind } = verifyTrackingToken(secret, tokens[i]!, c.kind)!;
      expect({ ws, subjectId, url, kind }).toEqual({ ws: workspaceId, subjectId: c.subjectId, url: c.url, kind: c.kind });
    }
    expect(verifyTrackingToken('another-secret', tokens[0]!, 'click')).toBeNull();
  });
});
