import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';

const DRAIN_RETRY_AFTER_SECONDS = 5;

/**
 * A request is in flight until its response is closed AND its handler has returned: a client that hangs up
 * mid-request closes the response while the handler still works on (and will still write).
 */
interface Flight {
  responseClosed: boolean;
  inHandler: boolean;
  landed: boolean;
}

/**
 * Deploys without dropped requests: once draining, new requests are answered 503 with `Retry-After` while the
 * ones already in flight finish; `idle()` resolves when none is left.
 */
export class DrainGate {
  private inFlight = 0;
  private isDraining = false;
  private waiters: Array<() => void> = [];
  private readonly flights = new WeakMap<FastifyRequest, Flight>();

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

  /** Register before the routes: the onRoute hook wraps every handler registered after it. */
  register(app: FastifyInstance): void {
    app.addHook('onRequest', async (request, reply) => {
      if (this.isDraining) {
        return reply
          .code(503)
          .header('retry-after', String(DRAIN_RETRY_AFTER_SECONDS))
          .header('connection', 'close')
          .send({ error: 'server draining', request_id: request.id });
      }
      const flight: Flight = { responseClosed: false, inHandler: false, landed: false };
      this.flights.set(request, flight);
      this.inFlight++;
      reply.raw.once('close', () => {
        flight.responseClosed = true;
        this.land(flight);
      });
    });

    // A reply still in flight when draining starts closes its connection too: the client opens its next one
    // elsewhere, and no keep-alive socket is left to cut while a request may be arriving on it.
    app.addHook('onSend', async (_request, reply) => {
      if (this.isDraining) reply.header('connection', 'close');
    });

    const gate = this;
    app.addHook('onRoute', (route) => {
      const handler = route.handler as RouteHandlerMethod;
      route.handler = async function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
        const flight = gate.flights.get(request);
        if (!flight) return handler.call(this, request, reply);
        if (flight.landed) {
          // The client left before its handler started: while closing, nobody waits for the answer.
          if (gate.isDraining) return reply;
          gate.inFlight++;
          flight.landed = false;
        }
        flight.inHandler = true;
        try {
          return await handler.call(this, request, reply);
        } finally {
          flight.inHandler = false;
          gate.land(flight);
        }
      };
    });
  }

  private land(flight: Flight): void {
    if (flight.landed || !flight.responseClosed || flight.inHandler) return;
    flight.landed = true;
    this.inFlight--;
    this.notifyIfIdle();
  }

  private notifyIfIdle(): void {
    if (this.inFlight > 0) return;
    for (const resolve of this.waiters.splice(0)) resolve();
  }
}
