import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import type { EmkConfig } from '../../domain/config.js';
import { serializerCompiler, validatorCompiler } from '../openapi/route-schema.js';
import { registerErrorHandling } from '../plugins/errors.js';
import { requestIdOf, registerRequestId } from '../plugins/request-id.js';
import { registerRequestMetrics } from '../plugins/request-metrics.js';
import { metricsRoutes } from '../routes/metrics/metrics-routes.js';
import { createEmkMetrics, type MeteredServices } from './emk-metrics.js';

export interface MetricsServer {
  /** Where it listens, as `http://host:port`. */
  address: string;
  close(): Promise<void>;
}

/**
 * `GET /metrics` alone, for a process that serves no API (`emk worker --metrics-port`): its own hand-overs, group
 * commits and pools, and the shared queues, with the token rule of `emk serve`'s (docs/operations.md).
 */
export async function startMetricsServer(services: MeteredServices, config: EmkConfig, port: number): Promise<MetricsServer> {
  const app = Fastify({ logger: { level: config.logLevel }, genReqId: requestIdOf });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);
  registerRequestId(app);
  const metrics = createEmkMetrics(services);
  registerRequestMetrics(app, metrics);
  await app.register(metricsRoutes(metrics, config.metricsToken));
  await app.listen({ port, host: config.host });
  const bound = app.server.address() as AddressInfo;
  const host = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  return { address: `http://${host}:${bound.port}`, close: () => app.close() };
}
