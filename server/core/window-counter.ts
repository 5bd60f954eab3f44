/**
 * Fixed-window counters in this process's memory. With several processes on one DATABASE_URL
 * each counts its own requests (docs/operating.md, "Rate limits").
 */
export class WindowCounter {
  private readonly windows = new Map<string, { start: number; count: number }>();
  private lastSweep = Date.now();

  private readonly windowMs: number;

  constructor(windowMs: number) {
    this.windowMs = windowMs;
  }

  /** Counts a request of `key`; returns the count in its window and the ms until the window resets. */
  hit(key: string, now = Date.now()): { count: number; resetMs: number } {
    this.sweep(now);
    let window = this.windows.get(key);
    if (!window || now - window.start >= this.windowMs) {
      window = { start: now, count: 0 };
      this.windows.set(key, window);
    }
    window.count += 1;
    return { count: window.count, resetMs: window.start + this.windowMs - now };
  }

  /** Takes back a request counted under `key` (it turned out to belong to a credential). */
  refund(key: string): void {
    const window = this.windows.get(key);
    if (window && window.count > 0) window.count -= 1;
  }

  private sweep(now: number): void {
    if (now - this.lastSweep <= this.windowMs) return;
    for (const [key, window] of this.windows) if (now - window.start >= this.windowMs) this.windows.delete(key);
    this.lastSweep = now;
  }
}
