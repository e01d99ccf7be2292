import { NotFoundError } from '../domain/errors.js';

/**
 * An unknown id told to a person: `campaign 123 not found`. The API keeps the contract's bare `not found` (CONTRACT
 * §3); the command line names the noun and the id it was given, whatever noun the domain error named.
 */
export async function namingNotFound<T>(noun: string, id: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof NotFoundError && (error.message === 'not found' || error.message === `${noun} not found`)) {
      throw new NotFoundError(`${noun} ${id} not found`);
    }
    throw error;
  }
}
