import Fastify from 'fastify';

/**
 * The baseline for the bench: a bare Fastify server with one POST route that parses the JSON body and does
 * nothing else. Prints `bare listening on <address>` on stderr; closes on SIGTERM/SIGINT.
 */
const port = Number(process.env.PORT ?? 0);
const host = process.env.HOST ?? '127.0.0.1';

const app = Fastify({ logger: false, bodyLimit: 5 * 1024 * 1024 });

app.post('/bare/event', async (request) => {
  void request.body;
  return { success: true };
});

const address = await app.listen({ port, host });
process.stderr.write(`bare listening on ${address}\n`);

const stop = () => void app.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
