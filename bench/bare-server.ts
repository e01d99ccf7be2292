import Fastify from 'fastify';

/**
 * The baseline for the bench: a bare Fastify server with one POST route that parses the JSON body and does
 * nothing else, and the two GET routes of email tracking doing nothing but answer: a 302 to a fixed URL (as
 * `/t/c/{token}` does) and a 1×1 GIF (as `/t/o/{token}`). Prints `bare listening on <address>` on stderr;
 * closes on SIGTERM/SIGINT.
 */
const port = Number(process.env.PORT ?? 0);
const host = process.env.HOST ?? '127.0.0.1';
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

const app = Fastify({ logger: false, bodyLimit: 5 * 1024 * 1024, routerOptions: { maxParamLength: 3000 } });

app.post('/bare/event', async (request) => {
  void request.body;
  return { success: true };
});

app.get<{ Params: { token: string } }>('/bare/t/c/:token', async (request, reply) => {
  void request.params.token;
  return reply.code(302).header('cache-control', 'no-store').header('location', 'https://bench.test/products/0').send();
});

app.get<{ Params: { token: string } }>('/bare/t/o/:token', async (request, reply) => {
  void request.params.token;
  return reply.header('content-type', 'image/gif').header('cache-control', 'no-store, no-cache, must-revalidate, max-age=0').send(PIXEL);
});

const address = await app.listen({ port, host });
process.stderr.write(`bare listening on ${address}\n`);

const stop = () => void app.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
