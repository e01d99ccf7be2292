import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { EmkError, RateLimitedError, UnavailableError } from '../../domain/errors.js';

interface HttpFailure {
  status: number;
  message: string;
  retryAfter?: number;
}

/** Fastify's own failures (body parsing, limits) in the spec's words; never a 500 for bad input. */
function describeFrameworkError(error: FastifyError): HttpFailure | null {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, message: 'payload too large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, message: 'unsupported content type: send application/json' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, message: 'invalid request: body is empty' };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, message: 'invalid request: content-length does not match the body' };
  }
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return { status: 400, message: 'invalid request: body is not valid JSON' };
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) return { status, message: error.message };
  return null;
}

function describe(error: unknown): HttpFailure | null {
  if (error instanceof RateLimitedError || error instanceof UnavailableError) {
    return { status: error.httpStatus, message: error.message, retryAfter: error.retryAfterSeconds };
  }
  if (error instanceof EmkError) return { status: error.httpStatus, message: error.message };
  return describeFrameworkError(error as FastifyError);
}

/**
 * Every failure leaves as `{error, request_id}` with a JSON content type. Domain errors keep their status;
 * anything unexpected is a 500 whose internals stay in the log.
 */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const failure = describe(error);
    if (!failure) {
      request.log.error({ err: error }, 'unhandled error');
      return reply.code(500).send({ error: 'internal error', request_id: request.id });
    }
    if (failure.retryAfter !== undefined) reply.header('retry-after', String(failure.retryAfter));
    return reply.code(failure.status).send({ error: failure.message, request_id: request.id });
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ error: 'not found', request_id: request.id });
  });
}

/**
 * Failures of Fastify's router (a malformed percent-escape, a path parameter longer than any id) happen
 * before any hook runs; they get the same envelope. An over-long id cannot exist: 404.
 */
export function answerRoutingError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const notFound = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
  void reply
    .header('x-request-id', request.id)
    .code(notFound ? 404 : 400)
    .send({ error: notFound ? 'not found' : 'invalid request: malformed URL', request_id: request.id });
}
