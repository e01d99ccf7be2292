import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { createSlots } from '../shared/slots.js';

/**
 * Passwords as scrypt hashes in a PHC-like string, `scrypt$ln=15,r=8,p=1$<salt>$<hash>` (base64): each hash
 * carries its own salt and cost, so the cost can rise later without invalidating stored hashes.
 */
const COST = { ln: 15, r: 8, p: 1 };
const SALT_BYTES = 16;
const KEY_BYTES = 32;
const FORMAT = /^scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/;

/**
 * One hash at a time in this process: each holds a thread of libuv's pool (4 by default) for its whole run,
 * and the SQLite driver and file reads need the same threads, so a burst of logins from many addresses must
 * not take them all (docs/security.md). The pool belongs to the process, and so does this queue.
 */
export const hashingSlots = createSlots(1);

function derive(password: string, salt: Buffer, cost: typeof COST, length: number): Promise<Buffer> {
  const N = 2 ** cost.ln;
  // scrypt needs 128·N·r bytes; Node refuses more than `maxmem` (32 MiB by default, exactly N=2^15, r=8).
  const options: ScryptOptions = { N, r: cost.r, p: cost.p, maxmem: 256 * N * cost.r };
  return hashingSlots.run(
    () =>
      new Promise((resolve, reject) => {
        scrypt(password.normalize('NFC'), salt, length, options, (error, key) => (error ? reject(error) : resolve(key)));
      }),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, COST, KEY_BYTES);
  return `scrypt$ln=${COST.ln},r=${COST.r},p=${COST.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** Whether the password is the one of the hash, compared in constant time. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = FORMAT.exec(stored);
  if (!parts) return false;
  const expected = Buffer.from(parts[5]!, 'base64');
  const cost = { ln: Number(parts[1]), r: Number(parts[2]), p: Number(parts[3]) };
  const key = await derive(password, Buffer.from(parts[4]!, 'base64'), cost, expected.length);
  return timingSafeEqual(key, expected);
}
