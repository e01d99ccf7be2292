import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/**
 * `node dist/bench/smtp-sink.js`: an SMTP server on a loopback port that takes every message and keeps nothing,
 * for `npm run bench:campaign -- … --smtp` (campaign.ts). It runs in a process of its own, so the sender's CPU is
 * the sender's. Prints `{"url"}` once listening; on SIGTERM prints `{"received"}` and exits.
 */
let received = 0;
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  maxClients: 100,
  onData(stream, _session, callback) {
    stream.on('data', () => {});
    stream.on('end', () => {
      received++;
      callback();
    });
  },
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `smtp://127.0.0.1:${port}` })}\n`);
});
process.on('SIGTERM', () => {
  process.stdout.write(`${JSON.stringify({ received })}\n`);
  server.close(() => process.exit(0));
});
