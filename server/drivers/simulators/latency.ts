/** Waits as long as a real backend might take: uniformly between the configured bounds. */
export function simulatedLatency([min, max]: [number, number], random: () => number = Math.random): Promise<void> {
  const ms = min + Math.floor(random() * (max - min + 1));
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}
