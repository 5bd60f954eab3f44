import { assertOutsideTransaction } from '../../db/pool.ts';

/**
 * Waits as long as a real backend might take: uniformly between the configured bounds. Every
 * simulated backend call starts here, so a backend call made inside a transaction (where it would
 * hold the transaction's connection for a backend's time) is refused, like a real one should be.
 */
export function simulatedLatency([min, max]: [number, number], random: () => number = Math.random): Promise<void> {
  assertOutsideTransaction('a backend call');
  const ms = min + Math.floor(random() * (max - min + 1));
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}
