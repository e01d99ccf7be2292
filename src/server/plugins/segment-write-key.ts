import type { FastifyRequest } from 'fastify';

/** Where Segment's clients put the write key: the HTTP Basic user (empty password), else `writeKey` in the body. */
export function segmentWriteKey(request: Pick<FastifyRequest, 'headers' | 'body'>): string | undefined {
  const match = /^basic\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  if (match) {
    const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
    const user = decoded.slice(0, decoded.includes(':') ? decoded.indexOf(':') : undefined);
    if (user !== '') return user;
  }
  const body = request.body as { writeKey?: unknown } | null | undefined;
  return typeof body?.writeKey === 'string' ? body.writeKey : undefined;
}
