import { spawn, type ChildProcess } from 'node:child_process';
import { expect, it } from 'vitest';
import { eventually } from './helpers/browser.js';
import { EMK_BIN, runEmk } from './helpers/cli.js';
import { describeEachDatabase, NO_LIMITS, type TestWorkspace } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

/** `emk serve` on a free port; resolves once it listens. */
function serve(databaseUrl: string, extra: string[] = []): Promise<{ child: ChildProcess; port: number; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [EMK_BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--db', databaseUrl, ...extra], {
    env: { ...process.env, ...NO_LIMITS, EMK_DRAIN_GRACE_MS: '0', EMK_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (chunk) => {
      stderr += chunk;
      const listening = /emk listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr);
      if (listening) resolve({ child, port: Number(listening[1]), exited });
    });
    child.once('exit', () => reject(new Error(`serve exited: ${stderr}`)));
  });
}

describeEachDatabase('the worker from the command line', (h) => {
  const { api, contact, campaign, messagesOf } = sendingHelpers(h);
  const db = () => ['--db', h().database.url];

  async function draftTo(ws: TestWorkspace, subscribers: number) {
    for (let i = 0; i < subscribers; i++) await contact(ws, 'subscribed', { first_name: `C${i}` });
    return campaign(ws);
  }

  it('emk worker --once sends what is due and exits 0', async () => {
    const ws = await h().workspace();
    const id = await draftTo(ws, 3);
    await api(ws, 'POST', `/campaigns/${id}/send`);
    const result = await runEmk(['worker', '--once', '--json', ...db()]);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ once: true, failed: 0 });
    expect((await messagesOf(ws, `campaign_id=${id}`)).map((m) => m.status)).toEqual(['captured', 'captured', 'captured']);
    expect((await runEmk(['worker', '--once', '--concurrency', '0', ...db()])).code).toBe(2);
  });

  it('emk campaigns send works the send through and reports it; a second send fails with exit 1', async () => {
    const ws = await h().workspace();
    const id = await draftTo(ws, 2);
    const result = await runEmk(['campaigns', 'send', id, '--json', '--workspace', ws.id, ...db()]);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ id, status: 'sent', recipients: 2, report: { sent: 2, failed: 0, skipped: 0 } });
    const again = await runEmk(['campaigns', 'send', id, '--workspace', ws.id, ...db()]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already sent/);
    const empty = await h().workspace();
    const human = await runEmk(['campaigns', 'send', await draftTo(empty, 0), '--workspace', empty.id, ...db()]);
    expect(human.stdout).toMatch(/sent to 0 recipient/);
  });

  it('emk serve runs the worker in-process: a send over HTTP is delivered; SIGTERM exits 0', async () => {
    const ws = await h().workspace();
    const id = await draftTo(ws, 2);
    const server = await serve(h().database.url);
    try {
      const reply = await fetch(`http://127.0.0.1:${server.port}/api/v1/campaigns/${id}/send`, { method: 'POST', headers: { 'x-api-key': ws.apiKey } });
      expect(reply.status).toBe(202);
      await eventually(async () => (await api(ws, 'GET', `/campaigns/${id}`)).json().status, (status) => status === 'sent');
      expect((await messagesOf(ws, `campaign_id=${id}`)).every((m) => m.status === 'captured')).toBe(true);
    } finally {
      server.child.kill('SIGTERM');
    }
    expect(await server.exited).toBe(0);
  });

  it('emk serve --no-worker leaves the jobs to a worker', async () => {
    const ws = await h().workspace();
    const id = await draftTo(ws, 1);
    const server = await serve(h().database.url, ['--no-worker']);
    try {
      await fetch(`http://127.0.0.1:${server.port}/api/v1/campaigns/${id}/send`, { method: 'POST', headers: { 'x-api-key': ws.apiKey } });
      // Barrier: a later request through the same server has been answered, so the send's commit (and any wake-up) is behind us.
      const later = await fetch(`http://127.0.0.1:${server.port}/api/v1/campaigns/${id}`, { headers: { 'x-api-key': ws.apiKey } });
      expect(((await later.json()) as { status: string }).status).toBe("sending");
      expect((await messagesOf(ws, `campaign_id=${id}`))[0]!.status).toBe('queued');
    } finally {
      server.child.kill('SIGTERM');
    }
    expect(await server.exited).toBe(0);
    expect((await runEmk(['worker', '--once', ...db()])).code).toBe(0);
    expect((await messagesOf(ws, `campaign_id=${id}`))[0]!.status).toBe('captured');
  });
});
