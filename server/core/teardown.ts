/**
 * What a start has opened, closed in reverse order: the same list unwinds a start that failed
 * halfway and stops a platform that ran, so that neither is written twice. A step that fails to
 * close is reported and the others still close.
 */
export class Teardown {
  private readonly steps: Array<{ name: string; close: () => Promise<void> | void }> = [];

  /** Adds what to close when the platform stops (or its start fails): last added, first closed. */
  add(name: string, close: () => Promise<void> | void): void {
    this.steps.push({ name, close });
  }

  /** Closes everything added, in reverse order; `failed` hears of each step that threw. */
  async run(failed: (name: string, error: unknown) => void = () => {}): Promise<void> {
    while (this.steps.length > 0) {
      const step = this.steps.pop()!;
      try {
        await step.close();
      } catch (error) {
        failed(step.name, error);
      }
    }
  }
}
