import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  connections: number;
  /** Seconds. */
  duration: number;
  headers: Record<string, string>;
  /** One body per connection, round robin over this list. */
  bodies: string[];
  /** When given, a fresh body for every request instead (e.g. a new order and customer each time). */
  nextBody?: () => string;
}

export interface LoadResult {
  requestsPerSecond: number;
  p99LatencyMs: number;
  non2xx: number;
  /** Connection errors and timeouts. */
  errors: number;
  total: number;
}

/** POSTs JSON bodies at `url` for `duration` seconds over keep-alive connections. */
export function runLoad(options: LoadOptions): Promise<LoadResult> {
  if (options.bodies.length === 0) throw new Error('runLoad needs at least one body');
  let nextBody = 0;
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: options.url,
        method: 'POST',
        connections: options.connections,
        duration: options.duration,
        headers: { 'content-type': 'application/json', ...options.headers },
        body: options.bodies[0]!,
        ...(options.nextBody
          ? { requests: [{ setupRequest: (request) => ({ ...request, body: options.nextBody!() }) }] }
          : { setupClient: (client) => client.setBody(options.bodies[nextBody++ % options.bodies.length]!) }),
      },
      (error, result) => {
        if (error) return reject(error);
        resolve({
          requestsPerSecond: result.requests.average,
          p99LatencyMs: result.latency.p99,
          non2xx: result.non2xx,
          errors: result.errors + result.timeouts,
          total: result.requests.total,
        });
      },
    );
  });
}
