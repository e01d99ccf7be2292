import { execFileSync } from 'node:child_process';
import { createHmac, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { snsStringToSign } from '../src/domain/relay-webhooks/relay-signatures.js';
import { describeEachDatabase, type Harness, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

type Kind = 'hard_bounce' | 'soft_bounce' | 'complaint' | 'delivery';
type Provider = 'ses' | 'postmark' | 'sendgrid' | 'mailgun';
const PROVIDERS: Provider[] = ['ses', 'postmark', 'sendgrid', 'mailgun'];

/** The SNS signing certificate: a key pair and a self-signed certificate made here with openssl. */
const dir = mkdtempSync(join(tmpdir(), 'emk-sns-'));
execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', '/CN=sns.amazonaws.com'], { stdio: 'ignore' });
const SNS_KEY = readFileSync(join(dir, 'key.pem'), 'utf8');
const SNS_CERT = readFileSync(join(dir, 'cert.pem'), 'utf8');
rmSync(dir, { recursive: true });

/** SendGrid's verification key pair (ECDSA P-256): the public half as SendGrid shows it, base64 DER. */
const sendgridKeys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const SENDGRID_PUBLIC = sendgridKeys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
const MAILGUN_KEY = 'key-3ax6xnjp29jd6fds4gc373sgvjxteol0';
const POSTMARK_SECRET = 'pm-hook-password';

/** What tests fetch instead of the network: the certificate at its SNS URL, and every subscription link confirmed. */
const fetched: string[] = [];
let failConfirmations = false;
const relayFetch = async (url: string) => {
  fetched.push(url);
  if (url.endsWith('.pem')) return SNS_CERT;
  if (failConfirmations) throw new Error('unreachable');
  return '<ConfirmSubscriptionResponse/>';
};

const fixture = (name: string) => readFileSync(new URL(`../fixtures/relays/${name}.json`, import.meta.url), 'utf8');
const fill = (text: string, values: Record<string, string>) => text.replace(/__([A-Z_]+)__/g, (whole, key: string) => values[key] ?? whole);

/** A signed SNS message (SignatureVersion 1 or 2) with the test's key. */
function signSns(message: Record<string, unknown>, version: '1' | '2' = '1'): Record<string, unknown> {
  const out: Record<string, unknown> = { ...message, SignatureVersion: version };
  out.Signature = sign(version === '1' ? 'sha1' : 'sha256', Buffer.from(snsStringToSign(out)!, 'utf8'), SNS_KEY).toString('base64');
  return out;
}

interface Target {
  email: string;
  messageId: string;
  host?: string;
  eventId?: string;
}

const FIXTURES: Record<Provider, Record<Kind, string>> = {
  ses: { hard_bounce: 'ses-bounce-permanent', soft_bounce: 'ses-bounce-transient', complaint: 'ses-complaint', delivery: 'ses-delivery' },
  postmark: { hard_bounce: 'postmark-bounce-hard', soft_bounce: 'postmark-bounce-soft', complaint: 'postmark-spam-complaint', delivery: 'postmark-delivery' },
  sendgrid: { hard_bounce: 'sendgrid-bounce', soft_bounce: 'sendgrid-deferred', complaint: 'sendgrid-spamreport', delivery: 'sendgrid-delivered' },
  mailgun: { hard_bounce: 'mailgun-failed-permanent', soft_bounce: 'mailgun-failed-temporary', complaint: 'mailgun-complained', delivery: 'mailgun-delivered' },
};

/** The relays' unsubscribe events (SES has none for mail sent over SMTP). */
const UNSUBSCRIBES: Array<{ provider: Provider; name: string }> = [
  { provider: 'postmark', name: 'postmark-subscription-change' },
  { provider: 'sendgrid', name: 'sendgrid-unsubscribe' },
  { provider: 'sendgrid', name: 'sendgrid-group-unsubscribe' },
  { provider: 'mailgun', name: 'mailgun-unsubscribed' },
];

type Edit = (event: any) => void;

/** Sets when an unsubscribe or suppression change happened, where each relay says it (Postmark in microseconds). */
const changedAt =
  (provider: Provider, at: number): Edit =>
  (event) => {
    if (provider === 'postmark') event.ChangedAt = new Date(at).toISOString().replace(/Z$/, '071Z');
    if (provider === 'sendgrid') event[0].timestamp = Math.floor(at / 1000);
    if (provider === 'mailgun') event['event-data'].timestamp = at / 1000;
  };

const relayCall = (provider: Provider, kind: Kind, t: Target, forge = false) => signedCall(provider, FIXTURES[provider][kind], t, { forge });

/**
 * A relay's call carrying one of its fixtures, signed as the relay signs it (`forge` spoils the signature or
 * credential; `edit` changes the event before).
 */
function signedCall(provider: Provider, name: string, t: Target, options: { forge?: boolean; edit?: Edit } = {}): { payload: string; headers: Record<string, string> } {
  const { forge = false, edit = () => {} } = options;
  const values = { EMAIL: t.email, MESSAGE_ID: t.messageId, MESSAGE_ID_HEADER: `<${t.messageId}@${t.host ?? 'localhost'}>`, EVENT_ID: t.eventId ?? randomUUID() };
  const event = (filled: Record<string, string>) => {
    const parsed = JSON.parse(fill(fixture(name), filled));
    edit(parsed);
    return parsed;
  };
  if (provider === 'ses') {
    const envelope = JSON.parse(fixture('sns-notification'));
    const signed = signSns({ ...envelope, MessageId: values.EVENT_ID, Message: JSON.stringify(event(values)) }, name === FIXTURES.ses.complaint ? '2' : '1');
    if (forge) signed.Message = (signed.Message as string).replace(t.email, `x${t.email}`);
    return { payload: JSON.stringify(signed), headers: { 'content-type': 'text/plain; charset=UTF-8', 'x-amz-sns-message-type': 'Notification' } };
  }
  if (provider === 'postmark') {
    const payload = JSON.stringify(event(values));
    const password = forge ? 'wrong' : POSTMARK_SECRET;
    return { payload, headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`emk:${password}`).toString('base64')}` } };
  }
  if (provider === 'sendgrid') {
    const payload = JSON.stringify(event(values));
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = sign('sha256', Buffer.from(timestamp + payload), sendgridKeys.privateKey).toString('base64');
    return {
      payload: forge ? payload.replace('"delivered"', '"bounce"').replace(t.email, `x${t.email}`) : payload,
      headers: { 'content-type': 'application/json', 'x-twilio-email-event-webhook-signature': signature, 'x-twilio-email-event-webhook-timestamp': timestamp },
    };
  }
  const timestamp = String(Math.floor(Date.now() / 1000));
  const token = randomUUID().replace(/-/g, '');
  const signature = createHmac('sha256', forge ? 'not-the-key' : MAILGUN_KEY).update(timestamp + token).digest('hex');
  // Mailgun shows the Message-ID without its angle brackets.
  const payload = JSON.stringify(event({ ...values, MESSAGE_ID_HEADER: `${t.messageId}@${t.host ?? 'localhost'}`, TIMESTAMP: timestamp, TOKEN: token, SIGNATURE: signature }));
  return { payload, headers: { 'content-type': 'application/json' } };
}

describeEachDatabase(
  'relay webhooks: bounces and complaints from SES, Postmark, SendGrid and Mailgun',
  (h) => {
    const s = sendingHelpers(h);
    const knex = () => h().services.db.knex;

    async function register(ws: TestWorkspace, provider: Provider): Promise<string> {
      const body = { provider, ...(provider === 'postmark' ? { secret: POSTMARK_SECRET } : provider === 'mailgun' ? { secret: MAILGUN_KEY } : provider === 'sendgrid' ? { public_key: SENDGRID_PUBLIC } : {}) };
      const res = await s.api(ws, 'POST', '/relay-webhooks', body);
      expect(res.statusCode, res.body).toBe(201);
      expect(Object.keys(res.json()).sort()).toEqual(['id', 'provider', 'url']);
      expect(res.json().url).toBe(`${h().config.baseUrl}/esp/${provider}/${res.json().id}`);
      return new URL(res.json().url).pathname;
    }

    const post = (path: string, call: { payload: string; headers: Record<string, string> }) =>
      h().app.inject({ method: 'POST', url: path, payload: call.payload, headers: call.headers });

    /** The state a relay event may change: the message row, the suppression, the contact's status and consent history. */
    async function stateOf(ws: TestWorkspace, sent: Awaited<ReturnType<typeof s.sentMessage>>) {
      const message = await knex()('messages').where({ id: sent.message.id }).first('status', 'soft_bounces', 'delivered_at');
      const suppression = await knex()('suppressions').where({ workspace_id: ws.id, email_key: sent.email }).first('reason');
      const contact = (await s.api(ws, 'GET', `/contacts/${sent.contactId}`)).json();
      const history = (await s.api(ws, 'GET', `/contacts/${sent.contactId}/consent`)).json().data as Array<{ origin: string }>;
      return {
        status: message.status as string,
        soft_bounces: Number(message.soft_bounces),
        delivered: message.delivered_at !== null,
        suppressed: (suppression?.reason as string | undefined) ?? null,
        subscription: contact.subscription_status as string,
        origins: history.map((c) => c.origin),
      };
    }

    for (const provider of PROVIDERS) {
      it(`${provider}: each kind of event has its effect once; a redelivery changes nothing more`, async () => {
        const ws = await h().workspace();
        const path = await register(ws, provider);
        const expected: Record<Kind, (before: Awaited<ReturnType<typeof stateOf>>) => Partial<Awaited<ReturnType<typeof stateOf>>>> = {
          hard_bounce: () => ({ status: 'bounced', suppressed: 'hard_bounce', subscription: 'subscribed' }),
          soft_bounce: (before) => ({ ...before, soft_bounces: 1 }),
          complaint: (before) => ({ status: 'complained', suppressed: 'complaint', subscription: 'unsubscribed', origins: [...before.origins, 'complaint'] }),
          delivery: (before) => ({ ...before, delivered: true }),
        };
        for (const kind of Object.keys(expected) as Kind[]) {
          const sent = await s.sentMessage(ws, '<p>Hello</p>');
          const before = await stateOf(ws, sent);
          expect(before).toMatchObject({ status: 'captured', soft_bounces: 0, delivered: false, suppressed: null, subscription: 'subscribed' });
          const call = relayCall(provider, kind, { email: sent.email, messageId: sent.message.id, eventId: `${kind}-${randomUUID()}` });
          const first = await post(path, call);
          expect(first.statusCode, `${kind}: ${first.body}`).toBe(200);
          expect(first.json(), kind).toEqual({ processed: 1 });
          const after = await stateOf(ws, sent);
          expect(after, kind).toMatchObject(expected[kind](before));
          // The relay retries the same event (SendGrid and Mailgun sign it again): nothing more happens.
          const again = await post(path, kind === 'delivery' || provider !== 'mailgun' ? call : relayCall(provider, kind, { email: sent.email, messageId: sent.message.id, eventId: JSON.parse(call.payload)['event-data'].id }));
          expect(again.statusCode, again.body).toBe(200);
          expect(again.json(), kind).toEqual({ processed: 0 });
          expect(await stateOf(ws, sent), kind).toEqual(after);
        }
      });

      it(`${provider}: a bad signature or credential is a 401 and changes nothing`, async () => {
        const ws = await h().workspace();
        const path = await register(ws, provider);
        const sent = await s.sentMessage(ws, '<p>Hello</p>');
        const before = await stateOf(ws, sent);
        for (const kind of ['hard_bounce', 'complaint'] as Kind[]) {
          const res = await post(path, relayCall(provider, kind, { email: sent.email, messageId: sent.message.id }, true));
          expect(res.statusCode, res.body).toBe(401);
          expect(res.json().error).toBe(provider === 'postmark' ? 'invalid credential' : 'invalid signature');
        }
        // No signature at all (SNS and Mailgun carry theirs in the body), and a call to another relay's path.
        const bare = relayCall(provider, 'hard_bounce', { email: sent.email, messageId: sent.message.id });
        const stripped = JSON.parse(bare.payload);
        if (provider === 'ses') delete stripped.Signature;
        if (provider === 'mailgun') delete stripped.signature;
        const unsigned = await h().app.inject({ method: 'POST', url: path, payload: JSON.stringify(stripped), headers: { 'content-type': 'application/json' } });
        expect(unsigned.statusCode).toBe(401);
        expect((await post(path.replace(`/esp/${provider}/`, `/esp/${provider === 'ses' ? 'mailgun' : 'ses'}/`), bare)).statusCode).toBe(404);
        // The barrier: a good call afterwards acts, so the refused ones had their chance to.
        expect((await post(path, relayCall(provider, 'delivery', { email: sent.email, messageId: sent.message.id }))).json()).toEqual({ processed: 1 });
        expect(await stateOf(ws, sent)).toEqual({ ...before, delivered: true });
      });

      it(`${provider}: an unknown message is 200 and ignored; one whose address is a contact acts on the address`, async () => {
        const ws = await h().workspace();
        const path = await register(ws, provider);
        // Neither the message nor the address is the workspace's (another host's Message-ID, an unknown id).
        for (const target of [
          { email: 'stranger@example.net', messageId: randomUUID() },
          { email: 'stranger@example.net', messageId: randomUUID(), host: 'elsewhere.example' },
        ]) {
          const res = await post(path, relayCall(provider, 'complaint', target));
          expect(res.statusCode, res.body).toBe(200);
          expect(res.json()).toEqual({ processed: 0 });
        }
        expect(await knex()('suppressions').where({ workspace_id: ws.id }).count({ n: '*' })).toEqual([{ n: expect.anything() }]);
        expect(Number((await knex()('suppressions').where({ workspace_id: ws.id }).count({ n: '*' }))[0]!.n)).toBe(0);
        // An unknown message to a contact of the workspace: the address is suppressed and the contact unsubscribed.
        const email = `known${randomUUID().slice(0, 8)}@example.com`;
        const contactId = await s.contact(ws, 'subscribed', {}, email);
        const res = await post(path, relayCall(provider, 'complaint', { email, messageId: randomUUID() }));
        expect(res.json()).toEqual({ processed: 1 });
        expect((await knex()('suppressions').where({ workspace_id: ws.id, email_key: email }).first('reason'))?.reason).toBe('complaint');
        expect((await s.api(ws, 'GET', `/contacts/${contactId}`)).json().subscription_status).toBe('unsubscribed');
        // Another workspace's message is not this workspace's: its webhook leaves it alone.
        const other = await h().workspace('Other');
        const theirs = await s.sentMessage(other, '<p>Hi</p>');
        expect((await post(path, relayCall(provider, 'hard_bounce', { email: 'nobody@example.org', messageId: theirs.message.id }))).json()).toEqual({ processed: 0 });
        expect((await knex()('messages').where({ id: theirs.message.id }).first('status')).status).toBe('captured');
      });
    }

    /** The contact's latest consent change as the API shows it, and the message it names. */
    async function lastConsentChange(ws: TestWorkspace, contactId: string) {
      const history = (await s.api(ws, 'GET', `/contacts/${contactId}/consent`)).json().data as Array<Record<string, unknown>>;
      const row = await knex()('subscription_changes').where({ contact_id: contactId }).orderBy('id', 'desc').first('message_id');
      return { ...history.at(-1), message_id: (row?.message_id as string | null | undefined) ?? null };
    }

    for (const { provider, name } of UNSUBSCRIBES) {
      it(`${name}: unsubscribes the contact as emk's own link does, at the relay's time, once`, async () => {
        const ws = await h().workspace();
        const path = await register(ws, provider);
        const sent = await s.sentMessage(ws, '<p>Hello</p>');
        const before = await stateOf(ws, sent);
        // The recipient leaves at the relay a second or two after subscribing; emk hears of it later.
        const at = Math.ceil((h().clock() + 1_000) / 1000) * 1000;
        h().clock.advance(5_000);
        const call = signedCall(provider, name, { email: sent.email, messageId: sent.message.id }, { edit: changedAt(provider, at) });
        const first = await post(path, call);
        expect(first.json(), first.body).toEqual({ processed: 1 });
        // Nothing else changes: no suppression, the message keeps its status.
        expect(await stateOf(ws, sent)).toEqual({ ...before, subscription: 'unsubscribed', origins: [...before.origins, provider] });
        expect(await lastConsentChange(ws, sent.contactId)).toEqual({
          status: 'unsubscribed',
          previous_status: 'subscribed',
          origin: provider,
          at: new Date(at).toISOString(),
          message_id: sent.message.id,
        });
        // The person subscribes again in emk; the relay's retry of the same event does not undo that.
        expect((await s.api(ws, 'PATCH', `/contacts/${sent.contactId}`, { subscription_status: 'subscribed' })).statusCode).toBe(200);
        const resubscribed = await stateOf(ws, sent);
        expect((await post(path, call)).json()).toEqual({ processed: 0 });
        expect(await stateOf(ws, sent)).toEqual(resubscribed);
        expect(resubscribed).toMatchObject({ subscription: 'subscribed', origins: [...before.origins, provider, 'api:update'] });
      });

      it(`${name}: an unknown message acts on the address when it is a contact's; a relay time after receipt is not kept`, async () => {
        const ws = await h().workspace();
        const path = await register(ws, provider);
        const stranger = await post(path, signedCall(provider, name, { email: 'stranger@example.net', messageId: randomUUID() }));
        expect(stranger.json(), stranger.body).toEqual({ processed: 0 });
        const email = `known${randomUUID().slice(0, 8)}@example.com`;
        const contactId = await s.contact(ws, 'subscribed', {}, email);
        h().clock.advance(1_000);
        const known = await post(path, signedCall(provider, name, { email, messageId: randomUUID() }, { edit: changedAt(provider, h().clock() + 3_600_000) }));
        expect(known.json(), known.body).toEqual({ processed: 1 });
        expect((await s.api(ws, 'GET', `/contacts/${contactId}`)).json().subscription_status).toBe('unsubscribed');
        expect(await lastConsentChange(ws, contactId)).toEqual({
          status: 'unsubscribed',
          previous_status: 'subscribed',
          origin: provider,
          at: new Date(h().clock()).toISOString(),
          message_id: null,
        });
        expect(await knex()('suppressions').where({ workspace_id: ws.id }).first('email')).toBeUndefined();
      });
    }

    it("postmark: a SubscriptionChange for a hard bounce or a spam complaint acts as Postmark's Bounce and SpamComplaint do, once between them", async () => {
      const ws = await h().workspace();
      const path = await register(ws, 'postmark');
      const hardBounce = 'postmark-subscription-change-hard-bounce';
      const bounced = await s.sentMessage(ws, '<p>Hello</p>');
      const beforeBounce = await stateOf(ws, bounced);
      expect((await post(path, signedCall('postmark', hardBounce, { email: bounced.email, messageId: bounced.message.id }))).json()).toEqual({ processed: 1 });
      expect(await stateOf(ws, bounced)).toEqual({ ...beforeBounce, status: 'bounced', suppressed: 'hard_bounce' });

      const complained = await s.sentMessage(ws, '<p>Hello</p>');
      const target = { email: complained.email, messageId: complained.message.id };
      const beforeComplaint = await stateOf(ws, complained);
      const spamComplaint = signedCall('postmark', hardBounce, target, { edit: (event) => void (event.SuppressionReason = 'SpamComplaint') });
      expect((await post(path, spamComplaint)).json()).toEqual({ processed: 1 });
      const afterComplaint = await stateOf(ws, complained);
      expect(afterComplaint).toEqual({ ...beforeComplaint, status: 'complained', suppressed: 'complaint', subscription: 'unsubscribed', origins: [...beforeComplaint.origins, 'complaint'] });
      // Postmark's SpamComplaint record of the same complaint: its own event, which finds its work done.
      expect((await post(path, relayCall('postmark', 'complaint', target))).json()).toEqual({ processed: 1 });
      expect(await stateOf(ws, complained)).toEqual(afterComplaint);
    });

    it('postmark: a reactivation lifts only a hard-bounce suppression emk made before it, and never subscribes', async () => {
      const ws = await h().workspace();
      const path = await register(ws, 'postmark');
      const reactivation = (email: string, at: number) =>
        signedCall('postmark', 'postmark-subscription-change-reactivation', { email, messageId: randomUUID() }, { edit: changedAt('postmark', at) });
      // A contact who left through Postmark's link, and whose address then bounced.
      const sent = await s.sentMessage(ws, '<p>Hello</p>');
      const target = { email: sent.email, messageId: sent.message.id };
      expect((await post(path, signedCall('postmark', 'postmark-subscription-change', target, { edit: changedAt('postmark', h().clock()) }))).json()).toEqual({ processed: 1 });
      expect((await post(path, relayCall('postmark', 'hard_bounce', target))).json()).toEqual({ processed: 1 });
      const bounced = await stateOf(ws, sent);
      expect(bounced).toMatchObject({ status: 'bounced', suppressed: 'hard_bounce', subscription: 'unsubscribed' });
      // Reactivated at Postmark before emk learned of the bounce: the bounce stands.
      expect((await post(path, reactivation(sent.email, h().clock() - 1_000))).json()).toEqual({ processed: 1 });
      expect(await stateOf(ws, sent)).toEqual(bounced);
      // Reactivated after it: the suppression is lifted, and the contact stays unsubscribed with no new change.
      h().clock.advance(1_000);
      expect((await post(path, reactivation(sent.email, h().clock()))).json()).toEqual({ processed: 1 });
      expect(await stateOf(ws, sent)).toEqual({ ...bounced, suppressed: null });

      // A complaint is the recipient's word: a reactivation leaves its suppression and the unsubscribe.
      const complained = await s.sentMessage(ws, '<p>Hello</p>');
      expect((await post(path, relayCall('postmark', 'complaint', { email: complained.email, messageId: complained.message.id }))).json()).toEqual({ processed: 1 });
      const afterComplaint = await stateOf(ws, complained);
      expect(afterComplaint).toMatchObject({ suppressed: 'complaint', subscription: 'unsubscribed' });
      expect((await post(path, reactivation(complained.email, h().clock()))).json()).toEqual({ processed: 1 });
      expect(await stateOf(ws, complained)).toEqual(afterComplaint);
    });

    it('sendgrid: a group_resubscribe does not subscribe the contact again', async () => {
      const ws = await h().workspace();
      const path = await register(ws, 'sendgrid');
      const sent = await s.sentMessage(ws, '<p>Hello</p>');
      const target = { email: sent.email, messageId: sent.message.id };
      expect((await post(path, signedCall('sendgrid', 'sendgrid-group-unsubscribe', target))).json()).toEqual({ processed: 1 });
      const unsubscribed = await stateOf(ws, sent);
      expect(unsubscribed.subscription).toBe('unsubscribed');
      expect((await post(path, signedCall('sendgrid', 'sendgrid-group-resubscribe', target))).json()).toEqual({ processed: 0 });
      // The barrier: a later event of the same call path acts, so the resubscribe had its chance to.
      expect((await post(path, relayCall('sendgrid', 'delivery', target))).json()).toEqual({ processed: 1 });
      expect(await stateOf(ws, sent)).toEqual({ ...unsubscribed, delivered: true });
    });

    it('ses: a subscription confirmation is verified, confirmed at its SNS link only, and pins the topic', async () => {
      const ws = await h().workspace();
      const path = await register(ws, 'ses');
      const confirmation = JSON.parse(fixture('sns-subscription-confirmation'));
      // Signed, but its link is not on an SNS host: refused, and nothing is fetched.
      fetched.length = 0;
      const elsewhere = await post(path, { payload: JSON.stringify(signSns({ ...confirmation, SubscribeURL: 'https://evil.example/confirm' })), headers: { 'content-type': 'text/plain' } });
      expect(elsewhere.statusCode).toBe(400);
      expect(elsewhere.json().error).toMatch(/SubscribeURL/);
      expect(fetched.filter((url) => !url.endsWith('.pem'))).toEqual([]);
      // A forged one: 401, not fetched.
      const forged = signSns(confirmation);
      forged.Token = 'other';
      expect((await post(path, { payload: JSON.stringify(forged), headers: { 'content-type': 'text/plain' } })).statusCode).toBe(401);
      // A certificate URL off SNS hosts is never fetched.
      const offHost = signSns({ ...confirmation, SigningCertURL: 'https://certs.example/SimpleNotificationService.pem' });
      expect((await post(path, { payload: JSON.stringify(offHost), headers: { 'content-type': 'text/plain' } })).statusCode).toBe(401);
      expect(fetched).not.toContain('https://certs.example/SimpleNotificationService.pem');

      // A link that cannot be reached is kept for the operator; the next confirmation reaches it.
      failConfirmations = true;
      const kept = await post(path, { payload: JSON.stringify(signSns(confirmation, '2')), headers: { 'content-type': 'text/plain' } });
      failConfirmations = false;
      expect(kept.json()).toEqual({ processed: 0 });
      let [listed] = (await s.api(ws, 'GET', '/relay-webhooks')).json().data;
      expect(listed).toMatchObject({ provider: 'ses', topic_arn: confirmation.TopicArn, subscribe_url: confirmation.SubscribeURL, confirmed_at: null });
      expect(JSON.stringify(listed)).not.toMatch(/secret|public_key/);
      const confirmed = await post(path, { payload: JSON.stringify(signSns(confirmation)), headers: { 'content-type': 'text/plain' } });
      expect(confirmed.json()).toEqual({ processed: 0 });
      expect(fetched).toContain(confirmation.SubscribeURL);
      [listed] = (await s.api(ws, 'GET', '/relay-webhooks')).json().data;
      expect(listed).toMatchObject({ subscribe_url: null, confirmed_at: expect.any(String) });

      // Another AWS account's topic, validly signed by SNS, cannot post here.
      const sent = await s.sentMessage(ws, '<p>Hello</p>');
      const call = relayCall('ses', 'hard_bounce', { email: sent.email, messageId: sent.message.id });
      const foreign = signSns({ ...JSON.parse(call.payload), TopicArn: 'arn:aws:sns:us-east-1:999999999999:theirs' });
      expect((await post(path, { payload: JSON.stringify(foreign), headers: call.headers })).statusCode).toBe(401);
      expect((await post(path, call)).json()).toEqual({ processed: 1 });
    });

    it('POST /relay-webhooks: bad input is a 400 naming the field; a body over 1 MiB at /esp is a 413', async () => {
      const ws = await h().workspace();
      const cases: Array<[unknown, string]> = [
        [{}, 'invalid request: provider must be one of ses, postmark, sendgrid, mailgun'],
        [{ provider: 'sparkpost' }, 'invalid request: provider must be one of ses, postmark, sendgrid, mailgun'],
        [{ provider: 'postmark' }, 'invalid request: secret is required for postmark'],
        [{ provider: 'mailgun', secret: '' }, 'invalid request: secret must not be empty'],
        [{ provider: 'sendgrid' }, 'invalid request: public_key is required for sendgrid'],
        [{ provider: 'sendgrid', public_key: 'bm90IGEga2V5' }, 'invalid request: public_key must be the Event Webhook verification key (base64 DER, ECDSA P-256)'],
      ];
      for (const [json, error] of cases) {
        const res = await s.api(ws, 'POST', '/relay-webhooks', json);
        expect(res.statusCode, JSON.stringify(json)).toBe(400);
        expect(res.json().error).toBe(error);
      }
      const path = await register(ws, 'sendgrid');
      const big = await h().app.inject({ method: 'POST', url: path, payload: `[${' '.repeat(1024 * 1024)}]`, headers: { 'content-type': 'application/json' } });
      expect(big.statusCode).toBe(413);
      expect((await s.api(ws, 'GET', '/relay-webhooks')).json().data.map((w: { provider: string }) => w.provider)).toEqual(['sendgrid']);
    });
  },
  {},
  { email: { relayFetch } },
);
