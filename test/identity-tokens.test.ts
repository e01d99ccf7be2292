import { expect, it } from 'vitest';
import { NotFoundError, ValidationError } from '../src/domain/errors.js';
import { uuidv7 } from '../src/domain/shared/ids.js';
import { describeEachDatabase, type TestWorkspace } from './helpers/harness.js';

describeEachDatabase('identity tokens', (h) => {
  const tokens = () => h().services.identityTokens;
  const contact = async (ws: TestWorkspace, email = 'ann@example.com') =>
    (await h().services.contacts.upsert(ws.id, { email })).contact.id;

  it('mint and resolve round-trip contact, message and campaign in a compact URL-safe token', async () => {
    const ws = await h().workspace();
    const contactId = await contact(ws);
    const claims = { contactId, messageId: uuidv7(), campaignId: uuidv7() };
    const token = await tokens().mint(ws.id, claims);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(token.length).toBeLessThanOrEqual(100);
    expect(encodeURIComponent(token)).toBe(token);
    expect(await tokens().resolve(ws.id, token)).toEqual({ ...claims, flowId: null });
  });

  it('a flow token, a contact-only token and ids that are not UUIDs round-trip exactly', async () => {
    const ws = await h().workspace();
    const contactId = await contact(ws);
    const flow = { contactId, messageId: uuidv7(), flowId: uuidv7() };
    expect(await tokens().resolve(ws.id, await tokens().mint(ws.id, flow))).toEqual({ ...flow, campaignId: null });
    expect(await tokens().resolve(ws.id, await tokens().mint(ws.id, { contactId }))).toEqual({
      contactId,
      messageId: null,
      campaignId: null,
      flowId: null,
    });
    const odd = { contactId, messageId: 'msg-42', campaignId: uuidv7().toUpperCase() };
    expect(await tokens().resolve(ws.id, await tokens().mint(ws.id, odd))).toEqual({ ...odd, flowId: null });
  });

  it('two messages to one contact get different tokens, each resolving to its own message', async () => {
    const ws = await h().workspace();
    const contactId = await contact(ws);
    const a = await tokens().mint(ws.id, { contactId, messageId: uuidv7() });
    const b = await tokens().mint(ws.id, { contactId, messageId: uuidv7() });
    expect(a).not.toBe(b);
    expect((await tokens().resolve(ws.id, a))!.messageId).not.toBe((await tokens().resolve(ws.id, b))!.messageId);
  });

  it('every single-character change of a token makes it resolve to null', async () => {
    const ws = await h().workspace();
    const contactId = await contact(ws);
    const token = await tokens().mint(ws.id, { contactId, messageId: uuidv7(), campaignId: uuidv7() });
    for (let i = 0; i < token.length; i++) {
      const swapped = token[i] === 'A' ? 'B' : 'A';
      const tampered = token.slice(0, i) + swapped + token.slice(i + 1);
      expect(await tokens().resolve(ws.id, tampered), `position ${i}`).toBeNull();
    }
    expect(await tokens().resolve(ws.id, token.slice(0, -1))).toBeNull();
    expect(await tokens().resolve(ws.id, `${token}A`)).toBeNull();
    expect(await tokens().resolve(ws.id, token.slice(1))).toBeNull();
  });

  it('a second spelling of the same bytes (unused base64 bits) is refused', async () => {
    const ws = await h().workspace();
    const contactId = await contact(ws);
    const token = await tokens().mint(ws.id, { contactId });
    const bytes = Buffer.from(token, 'base64url');
    expect(bytes.length % 3).not.toBe(0); // so the last character has spare bits
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const siblings = [...alphabet]
      .map((c) => token.slice(0, -1) + c)
      .filter((t) => t !== token && Buffer.from(t, 'base64url').equals(bytes));
    expect(siblings.length).toBeGreaterThan(0);
    for (const sibling of siblings) expect(await tokens().resolve(ws.id, sibling)).toBeNull();
  });

  it("a token of another workspace is null, even when it names this workspace's contact", async () => {
    const mine = await h().workspace('mine');
    const theirs = await h().workspace('theirs');
    const myContact = await contact(mine);
    const forged = await tokens().mint(theirs.id, { contactId: myContact, messageId: uuidv7() });
    expect(await tokens().resolve(mine.id, forged)).toBeNull();
    const mineToken = await tokens().mint(mine.id, { contactId: myContact });
    expect(await tokens().resolve(theirs.id, mineToken)).toBeNull();
    expect(await tokens().resolve(mine.id, mineToken)).not.toBeNull();
  });

  it('garbage is null, never an error', async () => {
    const ws = await h().workspace();
    const contactId = await contact(ws);
    const token = await tokens().mint(ws.id, { contactId });
    for (const garbage of ['', 'x', 'abc', '!!!!', 'A'.repeat(60), '_'.repeat(60), `${token}==`, `${token}.x`, 'é'.repeat(40), 'A'.repeat(100_000)]) {
      expect(await tokens().resolve(ws.id, garbage), garbage.slice(0, 20)).toBeNull();
    }
    for (const value of [null, undefined, 42, {}, [token]]) expect(await tokens().resolve(ws.id, value)).toBeNull();
    expect(await tokens().resolve('no-such-workspace', token)).toBeNull();
  });

  it('a token whose contact no longer exists resolves to null', async () => {
    const ws = await h().workspace();
    const contactId = await contact(ws, 'gone@example.com');
    const token = await tokens().mint(ws.id, { contactId, messageId: uuidv7() });
    expect(await tokens().resolve(ws.id, token)).not.toBeNull();
    await h().services.db.knex('contacts').where({ id: contactId }).del();
    expect(await tokens().resolve(ws.id, token)).toBeNull();
  });

  it('mint refuses claims without a contact or with both a campaign and a flow; an unknown workspace is NotFound', async () => {
    const ws = await h().workspace();
    const contactId = await contact(ws);
    await expect(tokens().mint(ws.id, { contactId, campaignId: uuidv7(), flowId: uuidv7() })).rejects.toBeInstanceOf(ValidationError);
    await expect(tokens().mint(ws.id, { contactId: '' })).rejects.toBeInstanceOf(ValidationError);
    await expect(tokens().mint(ws.id, { contactId, messageId: 'm'.repeat(256) })).rejects.toBeInstanceOf(ValidationError);
    await expect(tokens().mint('no-such-workspace', { contactId })).rejects.toBeInstanceOf(NotFoundError);
  });
});
