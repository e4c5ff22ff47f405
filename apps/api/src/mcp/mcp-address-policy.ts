import { BlockList, isIP } from 'node:net';

/**
 * Addresses an MCP server is never reached at through a broad allowlist entry: what is not the
 * public internet (RFC 6890's special-purpose ranges that route somewhere inside), where an
 * outbound call made for a client would reach the service's own network.
 */
const SPECIAL_RANGES: ReadonlyArray<readonly [network: string, prefix: number, family: 'ipv4' | 'ipv6', name: string]> = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'shared (CGNAT)'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'reserved'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'reserved'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  // IPv4-compatible (deprecated): `::a.b.c.d` must not carry 127.0.0.1 past the IPv4 rules.
  ['::', 96, 'ipv6', 'reserved'],
  ['fc00::', 7, 'ipv6', 'private'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['fec0::', 10, 'ipv6', 'reserved'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

/** One BlockList per range, so that a match can say which range it was. BlockList also applies IPv4 rules to IPv4-mapped IPv6 (`::ffff:127.0.0.1`). */
const RANGES = SPECIAL_RANGES.map(([network, prefix, family, name]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return { list, name };
});

/** The 16-bit groups of an IPv6 address (`::` expanded; a trailing dotted quad as two groups). */
function ipv6Groups(address: string): number[] {
  const [head, tail = ''] = address.includes('::') ? address.split('::') : [address, undefined];
  const parse = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [parseInt(group, 16)];
          const [a, b, c, d] = group.split('.').map(Number);
          return [(a << 8) | b, (c << 8) | d];
        });
  const start = parse(head);
  const end = address.includes('::') ? parse(tail) : [];
  return [...start, ...new Array<number>(8 - start.length - end.length).fill(0), ...end];
}

/** The IPv4 address NAT64 (64:ff9b::/96) or 6to4 (2002::/16) carries inside an IPv6 one: a gateway forwards to it. */
function embeddedIpv4(address: string): string | undefined {
  const groups = ipv6Groups(address);
  const quad = (high: number, low: number): string => [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((group) => group === 0)) return quad(groups[6], groups[7]);
  if (groups[0] === 0x2002) return quad(groups[1], groups[2]);
  return undefined;
}

/** `[::1]` → `::1`; a zone (`fe80::1%eth0`) is dropped, the address is what is judged. */
export function bareAddress(host: string): string {
  const unbracketed = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const zone = unbracketed.indexOf('%');
  return zone >= 0 ? unbracketed.slice(0, zone) : unbracketed;
}

/**
 * Which special range `address` (an IP literal) is in, e.g. `loopback` or `private`; `undefined`
 * for a public address. Anything that is not an IP address is judged unspecified: only resolved
 * addresses come here.
 */
export function specialRange(address: string): string | undefined {
  const bare = bareAddress(address);
  const family = isIP(bare);
  if (family === 0) return 'unspecified';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const found = RANGES.find(({ list }) => list.check(bare, type));
  if (found) return found.name;
  if (family === 6) {
    const inner = embeddedIpv4(bare);
    if (inner !== undefined) return specialRange(inner);
  }
  return undefined;
}
