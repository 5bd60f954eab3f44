/**
 * Buffers of one size, given back after use and handed out again. Keeps at most `keep` of them
 * between uses; takes beyond those are allocated (and dropped when given back).
 */
export class BufferPool {
  private readonly free: Buffer[] = [];
  private readonly size: number;
  private readonly keep: number;

  constructor(size: number, keep: number) {
    this.size = size;
    this.keep = keep;
  }

  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.size);
  }

  give(buffer: Buffer): void {
    if (buffer.length === this.size && this.free.length < this.keep) this.free.push(buffer);
  }
}
