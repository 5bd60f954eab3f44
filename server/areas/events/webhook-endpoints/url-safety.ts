import { BlockList, isIP } from 'node:net';
import { unprocessable } from '../../../core/errors.ts';

/** Resolves a host name to its addresses (every one), as a connection to it would. */
export type HostResolver = (hostname: string) => Promise<string[]>;

/** Why an address is refused, in the words of the refusal. */
type Refused = 'a loopback address' | 'a private address' | 'a link-local or metadata address' | 'an address not on the public internet';

// Where a webhook may never go: the platform's own machine, the networks behind it, and the
// cloud metadata services (169.254.169.254, fd00:ec2::254), with every other range that is not
// public (RFC 6890). IPv4-mapped and NAT64 addresses are checked as the IPv4 address they carry.
const RANGES: Array<[string, number, 'ipv4' | 'ipv6', Refused]> = [
  ['127.0.0.0', 8, 'ipv4', 'a loopback address'],
  ['::1', 128, 'ipv6', 'a loopback address'],
  ['10.0.0.0', 8, 'ipv4', 'a private address'],
  ['172.16.0.0', 12, 'ipv4', 'a private address'],
  ['192.168.0.0', 16, 'ipv4', 'a private address'],
  ['100.64.0.0', 10, 'ipv4', 'a private address'],
  ['fc00::', 7, 'ipv6', 'a private address'],
  ['169.254.0.0', 16, 'ipv4', 'a link-local or metadata address'],
  ['fe80::', 10, 'ipv6', 'a link-local or metadata address'],
  ['0.0.0.0', 8, 'ipv4', 'an address not on the public internet'],
  ['192.0.0.0', 24, 'ipv4', 'an address not on the public internet'],
  ['192.0.2.0', 24, 'ipv4', 'an address not on the public internet'],
  ['198.18.0.0', 15, 'ipv4', 'an address not on the public internet'],
  ['198.51.100.0', 24, 'ipv4', 'an address not on the public internet'],
  ['203.0.113.0', 24, 'ipv4', 'an address not on the public internet'],
  ['224.0.0.0', 3, 'ipv4', 'an address not on the public internet'],
  ['::', 128, 'ipv6', 'an address not on the public internet'],
  ['2001:db8::', 32, 'ipv6', 'an address not on the public internet'],
  ['ff00::', 8, 'ipv6', 'an address not on the public internet'],
];

const BLOCKS = RANGES.map(([network, prefix, family, reason]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return { list, family, reason };
});

/** The IPv4 address an IPv6 address carries (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`), if any. */
function embeddedIpv4(address: string): string | undefined {
  const match = /^(?:::ffff:|64:ff9b::)(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
  if (!match) return undefined;
  if (match[1]) return match[1];
  const high = parseInt(match[2]!, 16);
  const low = parseInt(match[3]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** Why the address may not be reached, or undefined when it is a public one (or loopback that development allows). */
export function refusedAddress(address: string, allowLoopback: boolean): Refused | undefined {
  const mapped = embeddedIpv4(address);
  if (mapped) return refusedAddress(mapped, allowLoopback);
  const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  const block = BLOCKS.find((candidate) => candidate.family === family && candidate.list.check(address, family));
  if (!block) return undefined;
  return allowLoopback && block.reason === 'a loopback address' ? undefined : block.reason;
}

export const urlNotAllowed = (detail: string) =>
  unprocessable('webhook_url_not_allowed', 'Webhook URL not allowed', detail, [{ pointer: '/url', detail }]);

/** The URL's scheme and form, before any name is resolved. `allowInsecure`: plain http too (development). */
export function checkUrlForm(raw: string, allowInsecure: boolean): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw urlNotAllowed('The webhook URL is not a URL.');
  }
  if (url.protocol !== 'https:' && !(allowInsecure && url.protocol === 'http:')) {
    throw urlNotAllowed(allowInsecure ? 'A webhook URL must use https or http.' : 'A webhook URL must use https.');
  }
  if (url.username || url.password) throw urlNotAllowed('A webhook URL may not carry a user name or password.');
  if (url.hash) throw urlNotAllowed('A webhook URL may not carry a fragment (#…).');
  return url;
}

/**
 * The addresses a delivery to `url` may connect to: every address its host resolves to, each
 * checked. One refused address refuses the URL (a name that resolves to a public and a private
 * address would reach either). Thrown: `webhook_url_not_allowed`, saying which address and why.
 */
export async function allowedAddresses(url: URL, resolve: HostResolver, allowLoopback: boolean): Promise<string[]> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = await resolve(host);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) throw urlNotAllowed(`${host} does not resolve to any address.`);
  }
  for (const address of addresses) {
    const refused = refusedAddress(address, allowLoopback);
    if (refused) {
      throw urlNotAllowed(
        `${host === address ? address : `${host} resolves to ${address}`}, ${refused}; webhooks are only sent to public addresses.`,
      );
    }
  }
  return addresses;
}
