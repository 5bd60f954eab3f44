// The columns a table shows for each kind of item, chosen for people: what they look for (state,
// region, address, age) first, never internal fields (secret-store paths, signed URLs). Any other
// field of the item can be asked for with --columns.
import { stringifyJson } from '../json.ts';

export interface Column {
  /** The name `--columns` takes (lowercase) and the header shows (uppercase). */
  name: string;
  value: (item: Record<string, unknown>) => unknown;
}

const field =
  (name: string): Column['value'] =>
  (item) =>
    name
      .split('.')
      .reduce<unknown>(
        (value, key) => (value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined),
        item,
      );

const column = (name: string, value: Column['value'] = field(name)): Column => ({ name, value });

/** `3m`, `5h`, `12d`: how long ago an ISO time was (future times read as `in 5h`). */
export function age(iso: unknown, now = Date.now()): string {
  if (typeof iso !== 'string') return '-';
  const seconds = Math.round((now - Date.parse(iso)) / 1000);
  if (Number.isNaN(seconds)) return '-';
  const magnitude = Math.abs(seconds);
  const text =
    magnitude < 60
      ? `${magnitude}s`
      : magnitude < 3600
        ? `${Math.floor(magnitude / 60)}m`
        : magnitude < 86_400
          ? `${Math.floor(magnitude / 3600)}h`
          : `${Math.floor(magnitude / 86_400)}d`;
  return seconds < 0 ? `in ${text}` : text;
}

const ageOf = (name: string) => column('age', (item) => age(item[name]));
const joined = (name: string, key?: string) =>
  column(name, (item) => {
    const values = item[name];
    if (!Array.isArray(values)) return values;
    return (values as unknown[])
      .map((value) => cell(key && value && typeof value === 'object' ? (value as Record<string, unknown>)[key] : value))
      .join(',');
  });
const cents = (name: string, heading: string) =>
  column(heading, (item) => {
    const value = item[name];
    if (typeof value !== 'number' && typeof value !== 'bigint') return value;
    const whole = BigInt(value);
    const sign = whole < 0n ? '-' : '';
    const absolute = whole < 0n ? -whole : whole;
    return `${sign}${absolute / 100n}.${String(absolute % 100n).padStart(2, '0')} ${typeof item.currency === 'string' ? item.currency.toUpperCase() : ''}`.trim();
  });
const date = (name: string) =>
  column(name.replace(/_at$/, ''), (item) => (typeof item[name] === 'string' ? String(item[name]).slice(0, 10) : item[name]));

/** Default columns, by the item's schema name in the contract. */
const DEFAULTS: Record<string, Column[]> = {
  VmOut: [
    column('name'),
    column('state'),
    column('region', field('region_id')),
    column('image', field('image.catalog_id')),
    column('vcpus'),
    column('memory', (item) => (typeof item.memory_mb === 'number' ? `${item.memory_mb / 1024} GB` : item.memory_mb)),
    column('disk', (item) => (typeof item.disk_gb === 'number' ? `${item.disk_gb} GB` : item.disk_gb)),
    column('ipv4', (item) => {
      const addresses = item.observed_addresses as { public_ipv4?: string[]; private_ipv4?: string[] } | null | undefined;
      return [...(addresses?.public_ipv4 ?? []), ...(addresses?.private_ipv4 ?? [])].join(',') || null;
    }),
    ageOf('created_at'),
    column('id'),
  ],
  RegionOut: [column('id'), column('name'), column('disk_redundancy'), joined('storage_pools', 'id'), joined('network_profiles', 'id')],
  ImageOut: [
    column('id'),
    column('name'),
    column('distro', field('os_distro')),
    column('version', field('os_version')),
    column('min_disk_gb'),
    column('min_ram_mb'),
  ],
  PublicIpOut: [
    column('address'),
    column('state'),
    column('region', field('region_id')),
    column('vm_id'),
    ageOf('created_at'),
    column('id'),
  ],
  SshKeyOut: [column('name'), column('fingerprint'), ageOf('created_at'), column('id')],
  BucketOut: [
    column('name'),
    column('state'),
    column('versioning'),
    column('max_objects', field('quota.max_objects')),
    column('max_size_bytes', field('quota.max_size_bytes')),
    ageOf('created_at'),
    column('id'),
  ],
  AccessKeyOut: [
    column('access_key_id', field('objectstore_access_key_id')),
    column('state'),
    date('last_rotated_at'),
    ageOf('created_at'),
    column('id'),
  ],
  InvoiceOut: [
    column('id'),
    column('status'),
    column('period', (item) =>
      [item.period_start, item.period_end].map((value) => (typeof value === 'string' ? value.slice(0, 10) : '?')).join(' to '),
    ),
    cents('total_cents', 'total'),
    cents('amount_due_cents', 'amount_due'),
  ],
  ApiTokenOut: [
    column('name'),
    joined('scopes'),
    date('expires_at'),
    date('last_used_at'),
    date('revoked_at'),
    ageOf('created_at'),
    column('id'),
  ],
  OperationRef: [
    column('id'),
    column('type'),
    column('state'),
    column('resource_id'),
    column('attempt'),
    ageOf('created_at'),
    column('error_detail'),
  ],
  AuditEventOut: [column('ts'), column('action'), column('result'), column('resource_type'), column('resource_id'), column('actor_sub')],
  ScheduledActionOut: [
    column('id'),
    column('kind'),
    column('when', (item) =>
      item.kind === 'once'
        ? item.run_at
        : `${item.kind === 'weekly' ? `day ${String(item.day_of_week)}` : `day ${String(item.day_of_month)} of the month`} ${String(item.time_of_day)} ${String(item.timezone)}`,
    ),
    column('state'),
    column('next_run_at'),
    column('last_outcome'),
  ],
};

/** The columns of a table of `items`: the ones asked for, else the kind's defaults, else the first eight scalar fields. */
export function columnsFor(schemaName: string | undefined, items: Array<Record<string, unknown>>, asked: string[] | undefined): Column[] {
  const defaults = (schemaName && DEFAULTS[schemaName]) || undefined;
  if (asked) {
    return asked.map((name) => defaults?.find((candidate) => candidate.name === name.toLowerCase()) ?? column(name));
  }
  if (defaults) return defaults;
  const first = items[0] ?? {};
  return Object.keys(first)
    .filter((key) => items.every((item) => item[key] === null || typeof item[key] !== 'object'))
    .slice(0, 8)
    .map((key) => column(key));
}

/** The names --columns knows for a kind: its defaults and every field of the item. */
export function columnNames(schemaName: string | undefined, fields: string[]): string[] {
  return [...new Set([...((schemaName && DEFAULTS[schemaName]?.map((candidate) => candidate.name)) || []), ...fields])];
}

/** A cell: `-` for nothing, numbers and bigints exactly, lists joined, objects as compact JSON. */
export function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((entry) => entry === null || typeof entry !== 'object')) return value.map(cell).join(',');
  return stringifyJson(value) ?? '';
}
