import { describe, expect, it } from 'vitest';
import { addressBits, allows, parseWebhookAllow } from '../../../host/api/webhooks/allowList.js';
import { checkWebhookUrl, resolveDestination } from '../../../host/api/webhooks/destination.js';
import { defaultBackoffMs } from '../../../host/api/webhooks/worker.js';

const loopback = parseWebhookAllow();
const unused = async () => {
  throw new Error('an IP literal must not be resolved');
};

describe('webhook allow list', () => {
  it('defaults to loopback: 127.0.0.0/8 and ::1, IPv4-mapped forms included, nothing else', () => {
    for (const a of ['127.0.0.1', '127.255.0.9', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '0:0:0:0:0:ffff:7f00:1'])
      expect(allows(loopback, 'x', a, 80), a).toBe(true);
    for (const a of ['10.0.0.1', '169.254.169.254', '::2', '::', '0.0.0.0', 'fe80::1', '::ffff:10.0.0.1', '128.0.0.1'])
      expect(allows(loopback, 'x', a, 80), a).toBe(false);
    expect(allows(loopback, 'x', 'not-an-address', 80)).toBe(false);
  });

  it('parses addresses, ranges, names and ports; every bad entry named at once', () => {
    const list = parseWebhookAllow('10.1.0.0/16:8443, fd00::/8 ,[fc00::/16]:7,hooks.example.com:443,[::1]:9000');
    expect(allows(list, 'a', '10.1.200.3', 8443)).toBe(true);
    expect(allows(list, 'a', '10.1.200.3', 443)).toBe(false);
    expect(allows(list, 'a', '10.2.0.1', 8443)).toBe(false);
    expect(allows(list, 'a', 'fd12::5', 1)).toBe(true);
    expect(allows(list, 'a', 'fe12::5', 1)).toBe(false);
    expect(allows(list, 'a', 'fc00::5', 7)).toBe(true);
    expect(allows(list, 'HOOKS.example.com', '203.0.113.9', 443)).toBe(true);
    expect(allows(list, 'hooks.example.com', '203.0.113.9', 80)).toBe(false);
    expect(allows(list, 'other.example.com', '203.0.113.9', 443)).toBe(false);
    expect(allows(list, 'a', '::1', 9000)).toBe(true);
    expect(allows(list, 'a', '::1', 9001)).toBe(false);
    expect(() => parseWebhookAllow('10.0.0.0/33,a_b,1.2.3.4:0,h:x, ')).toThrow(
      '--webhook-allow: "10.0.0.0/33": the prefix must be 0-32; ' +
        '"a_b": not an address, a range (a.b.c.d/n) or a name; ' +
        '"1.2.3.4:0": the port must be 1-65535; "h:x": the port must be a number',
    );
    expect(() => parseWebhookAllow(' , ')).toThrow('--webhook-allow: name at least one host');
  });

  it('expands IPv6 forms to one number', () => {
    expect(addressBits('::1')).toEqual({ family: 6, bits: 1n });
    expect(addressBits('1::')).toEqual({ family: 6, bits: 1n << 112n });
    expect(addressBits('::ffff:1.2.3.4')).toEqual(addressBits('1.2.3.4'));
    expect(addressBits('::ffff:102:304')).toEqual(addressBits('1.2.3.4'));
    expect(addressBits('1.2.3')).toBeUndefined();
  });

  it('URL spellings of an address are the address (the WHATWG parser normalizes them) and are checked', async () => {
    for (const url of ['http://0x7f.1:8080/', 'http://2130706433:8080/', 'http://[::ffff:127.0.0.1]:8080/'])
      expect((await resolveDestination(url, loopback, unused)).port).toBe(8080);
    for (const url of ['http://0xa9.254.169.254/', 'http://[::ffff:a9fe:a9fe]/', 'https://0/'])
      await expect(resolveDestination(url, loopback, unused)).rejects.toThrow(/outside the webhook allow list/);
    await expect(resolveDestination('http://nothing.test/', loopback, async () => [])).rejects.toThrow(
      'nothing.test resolved to no address',
    );
    expect(checkWebhookUrl('HTTPS://Example.COM/x').hostname).toBe('example.com');
  });

  it('backs off 1 s, 2 s, 4 s … capped at 5 minutes', () => {
    expect([1, 2, 3, 4, 8, 9, 10, 20].map(defaultBackoffMs)).toEqual([
      1000, 2000, 4000, 8000, 128_000, 256_000, 300_000, 300_000,
    ]);
  });
});
