import { isIPv4, isIPv6 } from 'node:net';
import type { components } from '../../../../generated/openapi.ts';
import { validationFailed, type FieldError } from '../../../core/errors.ts';
import type { FirewallRuleSpec } from '../../../drivers/hypervisor.ts';

type FirewallRule = components['schemas']['FirewallRule'];

/**
 * The rules of a firewall rule the schema cannot say: ports present for tcp and udp and absent
 * for icmp, within 1..65535 with a range in order, and sources that are networks (host bits
 * zero). Every breach is one `errors` entry with its pointer.
 */
export function checkFirewallRules(rules: FirewallRule[]): FirewallRuleSpec[] {
  const errors: FieldError[] = [];
  rules.forEach((rule, index) => {
    const pointer = `/inbound/${index}`;
    if (rule.protocol === 'icmp') {
      if (rule.ports !== null) errors.push({ pointer: `${pointer}/ports`, detail: 'must be null when protocol is icmp' });
    } else if (rule.ports === null) {
      errors.push({
        pointer: `${pointer}/ports`,
        detail: `is required for ${rule.protocol}: a port such as "22" or a range such as "8000-8080"`,
      });
    } else {
      const [first, last = first] = rule.ports.split('-').map(Number) as [number, number?];
      if (first < 1 || first > 65535 || last < 1 || last > 65535)
        errors.push({ pointer: `${pointer}/ports`, detail: 'ports must be between 1 and 65535' });
      else if (first > last) errors.push({ pointer: `${pointer}/ports`, detail: `the range ${rule.ports} starts above its end` });
    }
    rule.sources.forEach((source, sourceIndex) => {
      const problem = networkProblem(source);
      if (problem) errors.push({ pointer: `${pointer}/sources/${sourceIndex}`, detail: problem });
    });
  });
  if (errors.length > 0) throw validationFailed(errors);
  return rules.map((rule) => ({ protocol: rule.protocol, ports: rule.ports, sources: [...rule.sources] }));
}

/** Why a CIDR is not a network, or undefined when it is one. */
function networkProblem(cidr: string): string | undefined {
  const [address = '', prefixText = ''] = cidr.split('/');
  const prefix = Number(prefixText);
  if (isIPv4(address)) {
    const bits = address.split('.').reduce((value, octet) => (value << 8n) | BigInt(Number(octet)), 0n);
    return hostBitsProblem(cidr, address, bits, 32, prefix, (value) =>
      [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 255n)).join('.'),
    );
  }
  if (isIPv6(address)) {
    return hostBitsProblem(cidr, address, ipv6Bits(address), 128, prefix, formatIpv6);
  }
  return `${cidr} is not an IPv4 or IPv6 network in CIDR notation`;
}

function hostBitsProblem(
  cidr: string,
  address: string,
  bits: bigint,
  width: number,
  prefix: number,
  format: (value: bigint) => string,
): string | undefined {
  const hostMask = (1n << BigInt(width - prefix)) - 1n;
  if ((bits & hostMask) === 0n) return undefined;
  return `${cidr} has host bits set; did you mean ${format(bits & ~hostMask)}/${prefix} or ${address}/${width}?`;
}

function ipv6Bits(address: string): bigint {
  const [head = '', tail] = address.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups =
    tail === undefined ? headGroups : [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  return groups.reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n);
}

function formatIpv6(value: bigint): string {
  const groups = Array.from({ length: 8 }, (_, index) => ((value >> BigInt((7 - index) * 16)) & 0xffffn).toString(16));
  // The longest run of zero groups becomes "::".
  let best = { start: -1, length: 0 };
  for (let start = 0; start < 8; start++) {
    let length = 0;
    while (start + length < 8 && groups[start + length] === '0') length++;
    if (length > best.length && length > 1) best = { start, length };
  }
  if (best.start < 0) return groups.join(':');
  return `${groups.slice(0, best.start).join(':')}::${groups.slice(best.start + best.length).join(':')}`;
}
