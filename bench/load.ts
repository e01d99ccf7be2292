import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  connections: number;
  /** Seconds. */
  duration: number;
  headers: Record<string, string>;
  /** POST: one body per connection, round robin over this list. */
  bodies?: string[];
  /** POST: when given, a fresh body for every request instead (e.g. a new order and customer each time). */
  nextBody?: () => string;
  /** GET these paths (of `url`'s server) in turn, one per request, instead of POSTing bodies. */
  paths?: string[];
  /** The status every answer should have (e.g. 302 for a redirect); by default any 2xx. */
  expectStatus?: number;
  /** When given, requests per second over all connections (a steady load, not the most it can take). */
  overallRate?: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50LatencyMs: number;
  p99LatencyMs: number;
  /** Answers other than the expected: non-2xx, or not `expectStatus` when given. */
  non2xx: number;
  /** Connection errors and timeouts. */
  errors: number;
  total: number;
}

function requestsOf(options: LoadOptions): Partial<autocannon.Options> {
  const { paths, bodies, nextBody } = options;
  if (paths) {
    if (paths.length === 0) throw new Error('runLoad needs at least one path');
    let next = 0;
    return { method: 'GET', requests: [{ setupRequest: (request) => ({ ...request, method: 'GET', path: paths[next++ % paths.length]! }) }] };
  }
  if (!bodies || bodies.length === 0) throw new Error('runLoad needs at least one body');
  let nextClient = 0;
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...options.headers },
    body: bodies[0]!,
    ...(nextBody
      ? { requests: [{ setupRequest: (request) => ({ ...request, body: nextBody() }) }] }
      : { setupClient: (client) => client.setBody(bodies[nextClient++ % bodies.length]!) }),
  };
}

/** POSTs JSON bodies at `url` (or GETs `paths`) for `duration` seconds over keep-alive connections. */
export function runLoad(options: LoadOptions): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: options.url,
        connections: options.connections,
        duration: options.duration,
        headers: options.headers,
        ...(options.overallRate ? { overallRate: options.overallRate } : {}),
        ...requestsOf(options),
      },
      (error, result) => {
        if (error) return reject(error);
        const answered = Object.values(result.statusCodeStats).reduce((sum, { count }) => sum + count, 0);
        const expected = options.expectStatus === undefined ? result['2xx'] : (result.statusCodeStats[String(options.expectStatus)]?.count ?? 0);
        resolve({
          requestsPerSecond: result.requests.average,
          p50LatencyMs: result.latency.p50,
          p99LatencyMs: result.latency.p99,
          non2xx: options.expectStatus === undefined ? result.non2xx : answered - expected,
          errors: result.errors + result.timeouts,
          total: result.requests.total,
        });
      },
    );
  });
}
