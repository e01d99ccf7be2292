import { createHash, randomBytes, randomFillSync } from 'node:crypto';

// Random bytes drawn 4 KiB at a time: one system call per 256 ids instead of one per id.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomBlock(): Buffer {
  if (poolOffset >= pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const block = Buffer.from(pool.subarray(poolOffset, poolOffset + 16));
  poolOffset += 16;
  return block;
}

/**
 * UUID version 7: time-ordered, so new rows land at the end of primary-key indexes instead of at random
 * places (matters for the events table at tens of millions of rows).
 */
export function uuidv7(now = Date.now()): string {
  const bytes = randomBlock();
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** A random token of base-62 characters (about 5.95 bits each). */
export function randomToken(length: number): string {
  const bytes = randomBytes(length * 2);
  let out = '';
  for (let i = 0; i < bytes.length && out.length < length; i++) {
    const b = bytes[i]!;
    if (b < 248) out += ALPHABET[b % 62]; // 248 = 4 * 62: keeps the draw unbiased
  }
  return out.length === length ? out : out + randomToken(length - out.length);
}

/** Secrets (API keys) are stored only as this hash; they are high-entropy, so a fast hash is enough. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}
