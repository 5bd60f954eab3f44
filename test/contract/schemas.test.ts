// The schemas of the product's interface and of what the project decided beside it
// (docs/architecture.md, "The decisions the code relies on"), field by field:
// name, type, required, nullable, format. A failure names the schema and the field.
import { isLosslessNumber } from 'lossless-json';
import { describe, expect, test } from 'vitest';
import { fieldShape, loadBundle, type JsonSchema } from '../support/contract.ts';

/** [field, type, required, nullable, format]. `$Name` is a reference to schema Name. */
type Row = [string, string, boolean, boolean, string?];
const R = true; // required
const O = false; // not required
const N = true; // nullable
const V = false; // not nullable

const listRows: Row[] = [
  ['items', 'array', R, V],
  ['next_cursor', 'string', R, N],
];

/** Every list is `{items, next_cursor}`: list schema → item schema. */
const lists: Record<string, string> = {
  VmList: 'VmOut',
  ImageList: 'ImageOut',
  RegionList: 'RegionOut',
  PublicIpList: 'PublicIpOut',
  SshKeyList: 'SshKeyOut',
  BucketList: 'BucketOut',
  AccessKeyList: 'AccessKeyOut',
  InvoiceList: 'InvoiceOut',
  ApiTokenList: 'ApiTokenOut',
  OperationList: 'OperationRef',
  AuditEventList: 'AuditEventOut',
  ScheduledActionList: 'ScheduledActionOut',
};

const schemas: Record<string, Row[]> = {
  OperationRef: [
    ['id', 'string', R, V, 'uuid'],
    ['type', 'string', R, V],
    ['resource_type', 'string', R, V],
    ['resource_id', 'string', R, V],
    ['state', 'string', R, V],
    ['attempt', 'integer', R, V, 'int32'],
    ['max_attempts', 'integer', R, V, 'int32'],
    ['created_at', 'string', R, V, 'date-time'],
    ['finished_at', 'string', O, N, 'date-time'],
    ['error_class', 'string', O, N],
    ['error_detail', 'string', O, N],
  ],
  VmOut: [
    ['id', 'string', R, V, 'uuid'],
    ['org_id', 'string', R, V, 'uuid'],
    ['name', 'string', R, V],
    ['region_id', 'string', R, V],
    ['storage_pool_id', 'string', R, V],
    ['network_profile_id', 'string', R, V],
    ['image', '$ImageRef', R, V],
    ['vcpus', 'integer', R, V, 'int32'],
    ['memory_mb', 'integer', R, V, 'int32'],
    ['disk_gb', 'integer', R, V, 'int32'],
    ['state', 'string', R, V],
    ['desired_state', 'string', R, V],
    ['workload_type', 'string', R, V],
    ['protected', 'boolean', R, V],
    ['ssh_key_names', 'array', R, V],
    ['user_data_present', 'boolean', R, V],
    ['fqdn', 'string', R, N, 'hostname'],
    ['observed_status', 'string', R, N],
    ['observed_addresses', 'object', R, N],
    ['observed_at', 'string', R, N, 'date-time'],
    ['error_class', 'string', R, N],
    ['error_detail', 'string', R, N],
    ['allowed_actions', 'array', R, V],
    ['created_at', 'string', R, V, 'date-time'],
    ['updated_at', 'string', R, V, 'date-time'],
    ['labels', 'object', R, V],
  ],
  ImageRef: [
    ['catalog_id', 'string', R, V],
    ['name', 'string', R, V],
  ],
  ImageOut: [
    ['id', 'string', R, V],
    ['name', 'string', R, V],
    ['min_disk_gb', 'integer', R, V, 'int32'],
    ['min_ram_mb', 'integer', R, V, 'int32'],
    ['os_distro', 'string', R, N],
    ['os_version', 'string', R, N],
  ],
  PublicIpOut: [
    ['id', 'string', R, V, 'uuid'],
    ['region_id', 'string', R, V],
    ['address', 'string', R, N, 'ipv4'],
    ['state', 'string', R, V],
    ['vm_id', 'string', R, N, 'uuid'],
    ['error', 'string', R, N],
    ['created_at', 'string', R, V, 'date-time'],
  ],
  ScheduledActionOut: [
    ['id', 'string', R, V, 'uuid'],
    ['vm_id', 'string', R, V, 'uuid'],
    ['action', 'string', R, V],
    ['kind', 'string', R, V],
    ['run_at', 'string', R, N, 'date-time'],
    ['day_of_week', 'integer', R, N, 'int32'],
    ['day_of_month', 'integer', R, N, 'int32'],
    // A wall-clock HH:MM pattern, not `format: time` (RFC 3339 full-time; docs/architecture.md).
    ['time_of_day', 'string', R, N, undefined],
    ['timezone', 'string', R, V],
    ['state', 'string', R, V],
    ['next_run_at', 'string', R, N, 'date-time'],
    ['last_run_at', 'string', R, N, 'date-time'],
    ['last_outcome', 'string', R, N],
    ['last_outcome_detail', 'string', R, N],
    ['last_operation_id', 'string', R, N, 'uuid'],
    ['created_at', 'string', R, V, 'date-time'],
    ['updated_at', 'string', R, V, 'date-time'],
  ],
  BucketOut: [
    ['id', 'string', R, V, 'uuid'],
    ['name', 'string', R, V],
    ['state', 'string', R, V],
    ['versioning', 'boolean', R, V],
    ['quota', '$BucketQuotaOut', R, V],
    ['created_at', 'string', R, V, 'date-time'],
    ['updated_at', 'string', R, V, 'date-time'],
    ['observed_versioning', 'boolean', O, N],
    ['observed_exists', 'boolean', O, N],
    ['observed_quota', '$BucketQuotaOut', O, N],
    ['observed_at', 'string', O, N, 'date-time'],
    ['operation_id', 'string', O, N, 'uuid'],
    ['soft_deleted_at', 'string', O, N, 'date-time'],
    ['purge_after', 'string', O, N, 'date-time'],
  ],
  BucketQuotaOut: [
    ['max_objects', 'integer', R, N, 'int64'],
    ['max_size_bytes', 'integer', R, N, 'int64'],
  ],
  BucketCreateRequest: [
    ['name', 'string', R, V],
    ['versioning', 'boolean', O, V],
  ],
  BucketAccepted: [
    ['bucket', '$BucketOut', R, V],
    ['operation', '$OperationRef', R, V],
  ],
  AccessKeyOut: [
    ['id', 'string', R, V, 'uuid'],
    ['state', 'string', R, V],
    ['created_at', 'string', R, V, 'date-time'],
    ['updated_at', 'string', R, V, 'date-time'],
    ['objectstore_access_key_id', 'string', O, N],
    ['secretstore_path', 'string', O, N],
    ['last_rotated_at', 'string', O, N, 'date-time'],
    ['operation_id', 'string', O, N, 'uuid'],
  ],
  AccessKeyAccepted: [
    ['access_key', '$AccessKeyOut', R, V],
    ['operation', '$OperationRef', R, V],
  ],
  AccessKeyCreated: [
    ['access_key', '$AccessKeyOut', R, V],
    ['operation', '$OperationRef', R, V],
    ['secret_access_key', 'string', O, N],
  ],
  ApiTokenOut: [
    ['id', 'string', R, V, 'uuid'],
    ['name', 'string', R, V],
    ['scopes', 'array', R, V],
    ['created_at', 'string', R, V, 'date-time'],
    ['expires_at', 'string', O, N, 'date-time'],
    ['last_used_at', 'string', O, N, 'date-time'],
    ['revoked_at', 'string', O, N, 'date-time'],
  ],
  ApiTokenCreateRequest: [
    ['name', 'string', R, V],
    ['scopes', 'array', O, V],
    ['expires_at', 'string', O, N, 'date-time'],
  ],
  ApiTokenCreated: [
    ['token', '$ApiTokenOut', R, V],
    // A string, as the interface shows; absent (never null) in an idempotent replay.
    ['secret', 'string', O, V],
  ],
  InvoiceOut: [
    ['id', 'string', R, V],
    ['status', 'string', R, V],
    ['currency', 'string', R, V],
    ['amount_due_cents', 'integer', R, V, 'int64'],
    ['total_cents', 'integer', R, V, 'int64'],
    ['hosted_invoice_url', 'string', O, N, 'uri'],
    ['invoice_pdf', 'string', O, N, 'uri'],
    ['period_start', 'string', O, N, 'date-time'],
    ['period_end', 'string', O, N, 'date-time'],
  ],
  BillingOut: [
    ['state', 'string', R, V],
    ['billing_exempt', 'boolean', R, V],
    ['month_to_date', '$BillingMonthToDate', R, V],
    ['prices', 'array', R, V],
    ['plan', '$BillingPlan', O, N],
    ['current_period_end', 'string', O, N, 'date-time'],
    ['spend_budget_cents', 'integer', O, N, 'int64'],
  ],
  BillingMonthToDate: [
    ['egress_gb', 'string', R, V],
    ['estimated_cents', 'integer', R, V, 'int64'],
    ['storage_gb_month', 'string', R, V],
  ],
  BillingPrice: [
    ['meter', 'string', R, V],
    ['unit', 'string', R, V],
    ['unit_amount_micro_eur', 'integer', R, V, 'int64'],
  ],
  BillingPlan: [
    ['slug', 'string', R, V],
    ['display_name', 'string', R, V],
  ],
  BillingBudgetRequest: [['spend_budget_cents', 'integer', R, N, 'int64']],
  OrgContextOut: [
    ['name', 'string', R, V],
    ['org_id', 'string', R, V, 'uuid'],
    ['quota', '$QuotaOut', O, N],
    ['s3', '$EnrollmentOut', O, N],
  ],
  QuotaOut: [
    ['buckets_used', 'integer', R, V, 'int32'],
    ['hard_bytes', 'integer', R, V, 'int64'],
    ['max_buckets', 'integer', R, V, 'int32'],
    ['max_objects', 'integer', R, V, 'int64'],
    ['soft_bytes', 'integer', R, V, 'int64'],
  ],
  EnrollmentOut: [
    ['org_id', 'string', R, V, 'uuid'],
    ['state', 'string', R, V],
    ['created_at', 'string', R, V, 'date-time'],
    ['updated_at', 'string', R, V, 'date-time'],
  ],
  S3QuotaOut: [
    ['cap_bytes', 'integer', R, V, 'int64'],
    ['cap_objects', 'integer', R, V, 'int64'],
    ['soft_bytes', 'integer', R, V, 'int64'],
    ['enforced_bytes', 'integer', O, N, 'int64'],
    ['enforced_objects', 'integer', O, N, 'int64'],
    ['usage_bytes', 'integer', O, N, 'int64'],
    ['usage_objects', 'integer', O, N, 'int64'],
    ['frozen_reason', 'string', O, N],
    ['warning', 'string', O, N],
  ],
  S3QuotaRequest: [['hard_bytes', 'integer', R, V, 'int64']],
  AuditEventOut: [
    ['id', 'string', R, V, 'uuid'],
    ['ts', 'string', R, V, 'date-time'],
    ['action', 'string', R, V],
    ['resource_type', 'string', R, V],
    ['result', 'string', R, V],
    ['actor_sub', 'string', R, V],
    ['actor_realm', 'string', R, V],
    ['actor_token_id', 'string', O, N, 'uuid'],
    ['after', 'object', O, N],
    ['before', 'object', O, N],
    ['operation_id', 'string', O, N, 'uuid'],
    ['reason', 'string', O, N],
    ['request_id', 'string', O, N],
    ['resource_id', 'string', O, N],
  ],
  VmCreateRequest: [
    ['name', 'string', R, V],
    ['image', 'string', R, V],
    ['region', 'string', R, V],
    ['vcpus', 'integer', R, V, 'int32'],
    ['memory_mb', 'integer', R, V, 'int32'],
    ['disk_gb', 'integer', R, V, 'int32'],
    ['storage_pool', 'string', R, V],
    ['network_profile', 'string', R, V],
    ['ssh_keys', 'array', O, V],
    ['user_data', 'string', O, N],
    ['workload_type', 'string', O, V],
    ['labels', 'object', O, V],
  ],
  VmAccepted: [
    ['operation', '$OperationRef', R, V],
    ['vm', '$VmOut', R, V],
  ],
  VmRebuildRequest: [['image_id', 'string', R, V]],
  VmProtectionRequest: [['protected', 'boolean', R, V]],
  VmResizeRequest: [
    ['vcpus', 'integer', R, V, 'int32'],
    ['memory_mb', 'integer', R, V, 'int32'],
    ['disk_gb', 'integer', R, V, 'int32'],
  ],
  ScheduleRestartRequest: [
    ['kind', 'string', R, V],
    ['action', 'string', O, V],
    ['run_at', 'string', O, N, 'date-time'],
    ['day_of_week', 'integer', O, N, 'int32'],
    ['day_of_month', 'integer', O, N, 'int32'],
    ['time_of_day', 'string', O, N, undefined],
    ['timezone', 'string', O, V],
  ],
  ConsoleOut: [
    ['console_type', 'string', R, V],
    ['expires_in_seconds', 'integer', R, V, 'int32'],
    ['url', 'string', R, V, 'uri'],
  ],
  ConsoleRequested: [['operation', '$OperationRef', R, V]],
  PublicIpAccepted: [
    ['operation', '$OperationRef', R, V],
    ['public_ip', '$PublicIpOut', R, V],
  ],
  PublicIpAllocateRequest: [['region', 'string', R, V]],
  PublicIpAssociateRequest: [['vm_id', 'string', R, V, 'uuid']],
  BucketQuotaRequest: [
    ['max_objects', 'integer', O, N, 'int64'],
    ['max_size_bytes', 'integer', O, N, 'int64'],
  ],
  RegionOut: [
    ['id', 'string', R, V],
    ['name', 'string', R, V],
    ['disk_redundancy', 'string', R, V],
    ['storage_pools', 'array', R, V],
    ['network_profiles', 'array', R, V],
  ],
  SshKeyOut: [
    ['id', 'string', R, V, 'uuid'],
    ['name', 'string', R, V],
    ['fingerprint', 'string', R, V],
    ['created_at', 'string', R, V, 'date-time'],
  ],
  SshKeyCreateRequest: [
    ['name', 'string', R, V],
    ['public_key', 'string', R, V],
  ],
  ...Object.fromEntries(Object.keys(lists).map((name) => [name, listRows])),
  ScheduledActionList: [...listRows, ['scheduling_enabled', 'boolean', R, V]],
  Problem: [
    ['type', 'string', R, V, 'uri'],
    ['title', 'string', R, V],
    ['status', 'integer', R, V, 'int32'],
    ['detail', 'string', R, V],
    ['code', 'string', R, V],
    ['request_id', 'string', R, V],
    ['errors', 'array', O, V],
  ],
};

/** Enumerations the product names, in their order where order matters. */
const enums: Array<[schema: string, field: string, values: unknown[]]> = [
  ['OperationRef', 'state', ['queued', 'running', 'succeeded', 'failed', 'cancelled']],
  [
    'OperationRef',
    'type',
    [
      'vm.create',
      'vm.start',
      'vm.stop',
      'vm.reboot',
      'vm.resize',
      'vm.rebuild',
      'vm.rescue',
      'vm.unrescue',
      'vm.delete',
      'vm.firewall',
      'vm.console',
      'ip.allocate',
      'ip.associate',
      'ip.disassociate',
      'ip.release',
      'bucket.create',
      'bucket.delete',
      'bucket.restore',
      'bucket.quota',
      'access_key.create',
      'access_key.revoke',
    ],
  ],
  ['VmOut', 'state', ['creating', 'running', 'stopped', 'rebooting', 'resizing', 'rebuilding', 'rescue', 'deleting', 'error']],
  ['VmOut', 'desired_state', ['running', 'stopped', 'rescue', 'deleted']],
  ['PublicIpOut', 'state', ['pending', 'allocated', 'associating', 'associated', 'disassociating', 'releasing', 'error']],
  ['ScheduledActionOut', 'action', ['reboot']],
  ['ScheduledActionOut', 'kind', ['once', 'weekly', 'monthly']],
  ['ScheduledActionOut', 'state', ['scheduled', 'completed', 'cancelled']],
  ['ScheduledActionOut', 'last_outcome', ['queued', 'refused', 'missed', null]],
  ['ScheduleRestartRequest', 'kind', ['once', 'weekly', 'monthly']],
  ['ScheduleRestartRequest', 'action', ['reboot']],
  ['BucketOut', 'state', ['creating', 'active', 'deleting', 'soft_deleted', 'error']],
  ['AccessKeyOut', 'state', ['issuing', 'active', 'revoking', 'revoked', 'error']],
  ['EnrollmentOut', 'state', ['active', 'suspended']],
  ['RegionOut', 'disk_redundancy', ['replicated', 'single_copy']],
  ['S3QuotaOut', 'warning', ['below_current_usage', null]],
];

const document = loadBundle();
const components = document.components.schemas;

function schemaNamed(name: string): JsonSchema {
  const schema = components[name];
  if (!schema) throw new Error(`components.schemas.${name} is missing`);
  return schema;
}

function property(schemaName: string, field: string): JsonSchema {
  const properties = schemaNamed(schemaName).properties as Record<string, JsonSchema>;
  const schema = properties[field];
  if (!schema) throw new Error(`${schemaName}.${field} is missing`);
  return schema;
}

/** A `$Name` that stands where an object was asked for is fine when Name is an object schema. */
function typeMatches(actual: string, expected: string): boolean {
  if (actual === expected) return true;
  return expected === 'object' && actual.startsWith('$') && schemaNamed(actual.slice(1)).type === 'object';
}

describe.each(Object.entries(schemas))('%s', (schemaName, rows) => {
  test('has exactly the fields of the interface', () => {
    const properties = Object.keys(schemaNamed(schemaName).properties as object).sort();
    expect(properties).toEqual(rows.map(([field]) => field).sort());
  });

  test('lists exactly the required fields', () => {
    const required = [...((schemaNamed(schemaName).required as string[]) ?? [])].sort();
    expect(required).toEqual(
      rows
        .filter(([, , isRequired]) => isRequired)
        .map(([field]) => field)
        .sort(),
    );
  });

  test('refuses unknown fields', () => {
    expect(schemaNamed(schemaName).additionalProperties).toBe(false);
  });

  test.each(rows)(`${schemaName}.%s is %s (required %s, nullable %s, format %s)`, (field, type, _required, nullable, format) => {
    const shape = fieldShape(property(schemaName, field));
    expect(typeMatches(shape.type, type), `${schemaName}.${field}: type ${shape.type}, expected ${type}`).toBe(true);
    expect(shape.nullable, `${schemaName}.${field} nullable`).toBe(nullable);
    if (!type.startsWith('$') && type !== 'object') expect(shape.format, `${schemaName}.${field} format`).toBe(format);
  });
});

describe('lists', () => {
  test.each(Object.entries(lists))('%s holds %s items, at most 200 a page', (listName, itemName) => {
    const items = property(listName, 'items');
    expect(items.items).toEqual({ $ref: `#/components/schemas/${itemName}` });
    expect(String(items.maxItems)).toBe('200');
  });
});

describe('enumerations', () => {
  test.each(enums)('%s.%s', (schemaName, field, values) => {
    expect(property(schemaName, field).enum).toEqual(values);
  });

  test('VmOut.allowed_actions uses the vocabulary, in its order', () => {
    const items = property('VmOut', 'allowed_actions').items as JsonSchema;
    expect(items.enum).toEqual([
      'start',
      'stop',
      'reboot',
      'console',
      'resize',
      'rebuild',
      'rescue',
      'unrescue',
      'delete',
      'firewall',
      'public_ip',
      'protection',
    ]);
  });

  test('API key scopes are read and write', () => {
    expect((property('ApiTokenCreateRequest', 'scopes').items as JsonSchema).enum).toEqual(['read', 'write']);
    expect(property('ApiTokenCreateRequest', 'scopes').default).toEqual(['read']);
  });
});

describe('limits', () => {
  const bound = (value: unknown) => (isLosslessNumber(value) ? value.toString() : String(value));

  test('the spend budget is a positive integer up to 9223372036854775807, kept exact in the bundle', () => {
    const budget = property('BillingBudgetRequest', 'spend_budget_cents');
    expect(bound(budget.minimum)).toBe('1');
    expect(bound(budget.maximum)).toBe('9223372036854775807');
    expect(bound(property('BillingOut', 'spend_budget_cents').maximum)).toBe('9223372036854775807');
  });

  test.each([
    ['BucketCreateRequest', 'name', 3, 63],
    ['ApiTokenCreateRequest', 'name', 1, 100],
  ])('%s.%s is %i to %i characters', (schemaName, field, min, max) => {
    const schema = property(schemaName, field);
    expect([schema.minLength, schema.maxLength].map(bound)).toEqual([String(min), String(max)]);
  });

  test.each([
    ['ScheduleRestartRequest', 'day_of_month', 1, 28],
    ['ScheduleRestartRequest', 'day_of_week', 0, 6],
    ['ScheduledActionOut', 'day_of_month', 1, 28],
    ['ScheduledActionOut', 'day_of_week', 0, 6],
  ])('%s.%s is %i to %i', (schemaName, field, min, max) => {
    const schema = property(schemaName, field);
    expect([schema.minimum, schema.maximum].map(bound)).toEqual([String(min), String(max)]);
  });

  test('a bucket name is lowercase letters, digits and hyphens, alphanumeric at both ends, no dots', () => {
    const pattern = new RegExp(property('BucketCreateRequest', 'name').pattern as string);
    for (const name of ['abc', 'acme-backups', '0-9', 'a'.repeat(63)]) expect(name).toMatch(pattern);
    for (const name of ['ab', 'Acme', 'acme.backups', '-acme', 'acme-', 'a'.repeat(64), 'acme_b']) expect(name).not.toMatch(pattern);
  });

  test('an instance name is lowercase letters, digits and hyphens, alphanumeric at both ends', () => {
    const pattern = new RegExp(property('VmCreateRequest', 'name').pattern as string);
    for (const name of ['web-1', 'a', 'db01']) expect(name).toMatch(pattern);
    for (const name of ['Web-1', '-web', 'web-', 'web_1', 'web.1']) expect(name).not.toMatch(pattern);
  });

  test('time_of_day is a wall-clock HH:MM with optional seconds', () => {
    const pattern = new RegExp(property('ScheduleRestartRequest', 'time_of_day').pattern as string);
    for (const time of ['03:00', '23:59', '00:00:30']) expect(time).toMatch(pattern);
    for (const time of ['3:00', '24:00', '03:60', '03:00Z', '03:00:00+01:00']) expect(time).not.toMatch(pattern);
  });
});
