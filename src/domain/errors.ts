/**
 * The one error family. Every failure the domain reports on purpose is an EmkError: it knows its HTTP status
 * (the server's error handler maps it) and its exit code (the CLI maps it). Anything else is a bug and
 * becomes a 500 with internals hidden.
 */
export class EmkError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly httpStatus: number,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Bad input. The message names the field: `invalid request: email is required`. */
export class ValidationError extends EmkError {
  constructor(message: string) {
    super(message, 'invalid_request', 400);
  }
}

/** Wrong command-line usage: exit code 2. */
export class UsageError extends EmkError {
  constructor(message: string) {
    super(message, 'usage', 400, 2);
  }
}

export class NotFoundError extends EmkError {
  constructor(message = 'not found') {
    super(message, 'not_found', 404);
  }
}

export class UnauthorizedError extends EmkError {
  constructor(message: string) {
    super(message, 'unauthorized', 401);
  }
}

/** The credential is good, but its holder may not do this (a member on an owner-only route, closed registration). */
export class ForbiddenError extends EmkError {
  constructor(message = 'forbidden') {
    super(message, 'forbidden', 403);
  }
}

/** A unique constraint said no: the thing already exists. */
export class ConflictError extends EmkError {
  constructor(message = 'conflict') {
    super(message, 'conflict', 409);
  }
}

/** A workspace limit (its contact limit) forbids the write. */
export class LimitReachedError extends EmkError {
  constructor(message: string) {
    super(message, 'limit_reached', 403);
  }
}

export class PayloadTooLargeError extends EmkError {
  constructor() {
    super('payload too large', 'payload_too_large', 413);
  }
}

export class RateLimitedError extends EmkError {
  constructor(readonly retryAfterSeconds: number) {
    super('rate limit exceeded', 'rate_limited', 429);
  }
}

export class UnavailableError extends EmkError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message, 'unavailable', 503);
  }
}
