import type { FastifyInstance } from 'fastify';

const DRAIN_RETRY_AFTER_SECONDS = 5;

/**
 * Deploys without dropped requests: once draining, new requests are answered 503 with `Retry-After` while the
 * ones already in flight finish; `idle()` resolves when none is left.
 */
export class DrainGate {
  private inFlight = 0;
  private isDraining = false;
  private waiters: Array<() => void> = [];

  get draining(): boolean {
    return this.isDraining;
  }

  start(): void {
    this.isDraining = true;
    this.notifyIfIdle();
  }

  idle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  register(app: FastifyInstance): void {
    app.addHook('onRequest', async (request, reply) => {
      if (this.isDraining) {
        return reply
          .code(503)
          .header('retry-after', String(DRAIN_RETRY_AFTER_SECONDS))
          .header('connection', 'close')
          .send({ error: 'server draining', request_id: request.id });
      }
      this.inFlight++;
      reply.raw.once('close', () => {
        this.inFlight--;
        this.notifyIfIdle();
      });
    });
  }

  private notifyIfIdle(): void {
    if (this.inFlight > 0) return;
    for (const resolve of this.waiters.splice(0)) resolve();
  }
}
