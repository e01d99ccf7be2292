/** The part of autocannon 8's programmatic API the bench uses (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    /** One connection; `setupClient` may give it a body and headers of its own. */
    interface Client {
      setBody(body: string | Buffer): void;
      setHeaders(headers: Record<string, string>): void;
    }

    interface Options {
      url: string;
      connections?: number;
      /** Seconds. */
      duration?: number;
      /** Requests per second over all connections (default: as many as they can). */
      overallRate?: number;
      /** Seconds to wait for a response. */
      timeout?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      setupClient?: (client: Client) => void;
      /** Request templates; `setupRequest` may rewrite each request before it is sent. */
      requests?: Array<{ setupRequest?: (request: Record<string, unknown>) => Record<string, unknown> }>;
    }

    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p90: number;
      p99: number;
    }

    interface Result {
      url: string;
      connections: number;
      /** Seconds actually run. */
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      '2xx': number;
      /** Milliseconds. */
      latency: Histogram;
      /** Per-second samples. */
      requests: Histogram & { sent: number };
      throughput: Histogram;
      statusCodeStats: Record<string, { count: number }>;
    }

    interface Instance extends EventEmitter {
      stop(): void;
    }
  }

  function autocannon(options: autocannon.Options, done: (error: Error | null, result: autocannon.Result) => void): autocannon.Instance;

  export default autocannon;
}
