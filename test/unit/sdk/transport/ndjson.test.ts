import { describe, expect, it } from 'vitest';
import { LineReader } from '../../../../sdk/transport/ndjson.js';

function collect(max: number, skip = false) {
  const lines: string[] = [];
  const overflows: number[] = [];
  const reader = new LineReader(max, {
    onLine: (l) => lines.push(l.toString('utf8')),
    onOverflow: (n) => {
      overflows.push(n);
      return skip ? 'skip' : undefined;
    },
  });
  return { reader, lines, overflows };
}

describe('LineReader', () => {
  it('splits lines across chunk boundaries and skips empty lines and CRLF ends', () => {
    const { reader, lines } = collect(100);
    reader.push(Buffer.from('{"a":1}\n{"b"'));
    reader.push(Buffer.from(':2}\n\n\n{"c":3}\r\n'));
    expect(lines).toEqual(['{"a":1}', '{"b":2}', '{"c":3}\r']);
  });

  it('reassembles a UTF-8 character split between chunks', () => {
    const { reader, lines } = collect(100);
    const bytes = Buffer.from('"héllo ✓"\n');
    reader.push(bytes.subarray(0, 3));
    reader.push(bytes.subarray(3, 10));
    reader.push(bytes.subarray(10));
    expect(lines).toEqual(['"héllo ✓"']);
  });

  it('stops at a line over the cap without buffering it, and reports its size once', () => {
    const { reader, lines, overflows } = collect(10);
    reader.push(Buffer.from('short\n0123456'));
    reader.push(Buffer.from('789ABC'));
    reader.push(Buffer.from('\nnext\n'));
    expect(lines).toEqual(['short']);
    expect(overflows).toEqual([13]);
    expect(reader.bufferedBytes).toBe(0);
  });

  it('in skip mode drops only the oversized line', () => {
    const { reader, lines, overflows } = collect(5, true);
    reader.push(Buffer.from('ok\n123456'));
    reader.push(Buffer.from('789\nfine\n'));
    expect(lines).toEqual(['ok', 'fine']);
    expect(overflows).toHaveLength(1);
  });

  it('accepts a line of exactly the cap', () => {
    const { reader, lines, overflows } = collect(5);
    reader.push(Buffer.from('12345\n'));
    expect(lines).toEqual(['12345']);
    expect(overflows).toEqual([]);
  });
});
