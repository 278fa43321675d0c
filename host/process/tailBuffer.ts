/** Keeps the last `capacity` bytes written to it (e.g. a runner's stderr). */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly capacity: number) {}

  push(chunk: Buffer): void {
    if (chunk.length >= this.capacity) {
      this.chunks = [chunk.subarray(chunk.length - this.capacity)];
      this.size = this.capacity;
      return;
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size - (this.chunks[0]?.length ?? 0) >= this.capacity) {
      this.size -= this.chunks.shift()!.length;
    }
  }

  /** The kept bytes as UTF-8 (a character cut at the start shows as U+FFFD). */
  toString(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.capacity)).toString('utf8');
  }
}
