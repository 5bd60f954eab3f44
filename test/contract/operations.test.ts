// Every operation the product promises, with its method and path: those of its interface, then
// those the project added where the interface left them open (docs/architecture.md).
import { describe, expect, test } from 'vitest';
import { loadBundle } from '../support/contract.ts';

const org = '/v1/orgs/{org}';

/** [operationId, method, path]: the interface's endpoints, then the ones the project added. */
const operations: Array<[string, string, string]> = [
  // The interface's endpoints: compute
  ['createVm', 'post', `${org}/compute/vms`],
  ['listVms', 'get', `${org}/compute/vms`],
  ['getVm', 'get', `${org}/compute/vms/{vm_id}`],
  ['rebuildVm', 'post', `${org}/compute/vms/{vm_id}/rebuild`],
  ['setVmProtection', 'put', `${org}/compute/vms/{vm_id}/protection`],
  ['scheduleVmRestart', 'post', `${org}/compute/vms/{vm_id}/scheduled-actions`],
  ['listVmScheduledActions', 'get', `${org}/compute/vms/{vm_id}/scheduled-actions`],
  ['cancelScheduledAction', 'delete', `${org}/compute/scheduled-actions/{schedule_id}`],
  ['collectConsole', 'get', `${org}/compute/vms/{vm_id}/console`],
  ['listImages', 'get', `${org}/compute/images`],
  ['associatePublicIp', 'post', `${org}/compute/public-ips/{public_ip_id}/associate`],
  ['releasePublicIp', 'delete', `${org}/compute/public-ips/{public_ip_id}`],
  // object storage
  ['getBucket', 'get', `${org}/s3/buckets/{bucket_id}`],
  ['setBucketQuota', 'put', `${org}/s3/buckets/{bucket_id}/quota`],
  ['restoreBucket', 'post', `${org}/s3/buckets/{bucket_id}/restore`],
  ['createAccessKey', 'post', `${org}/s3/access-keys`],
  ['revokeAccessKey', 'delete', `${org}/s3/access-keys/{key_id}`],
  ['setQuota', 'put', `${org}/s3/quota`],
  // billing, API keys, operations and organization
  ['setBillingBudget', 'put', `${org}/billing`],
  ['listInvoices', 'get', `${org}/invoices`],
  ['createApiToken', 'post', `${org}/api-tokens`],
  ['listApiTokens', 'get', `${org}/api-tokens`],
  ['listOperations', 'get', `${org}/operations`],
  ['getOrgContext', 'get', org],
  // The endpoints the project added where the interface left them open
  ['listRegions', 'get', `${org}/compute/regions`],
  ['startVm', 'post', `${org}/compute/vms/{vm_id}/start`],
  ['stopVm', 'post', `${org}/compute/vms/{vm_id}/stop`],
  ['rebootVm', 'post', `${org}/compute/vms/{vm_id}/reboot`],
  ['rescueVm', 'post', `${org}/compute/vms/{vm_id}/rescue`],
  ['unrescueVm', 'post', `${org}/compute/vms/{vm_id}/unrescue`],
  ['resizeVm', 'post', `${org}/compute/vms/{vm_id}/resize`],
  ['deleteVm', 'delete', `${org}/compute/vms/{vm_id}`],
  ['getVmFirewall', 'get', `${org}/compute/vms/{vm_id}/firewall`],
  ['setVmFirewall', 'put', `${org}/compute/vms/{vm_id}/firewall`],
  ['requestConsole', 'post', `${org}/compute/vms/{vm_id}/console`],
  ['listPublicIps', 'get', `${org}/compute/public-ips`],
  ['allocatePublicIp', 'post', `${org}/compute/public-ips`],
  ['getPublicIp', 'get', `${org}/compute/public-ips/{public_ip_id}`],
  ['disassociatePublicIp', 'post', `${org}/compute/public-ips/{public_ip_id}/disassociate`],
  ['listSshKeys', 'get', `${org}/compute/ssh-keys`],
  ['createSshKey', 'post', `${org}/compute/ssh-keys`],
  ['deleteSshKey', 'delete', `${org}/compute/ssh-keys/{ssh_key_id}`],
  ['createBucket', 'post', `${org}/s3/buckets`],
  ['listBuckets', 'get', `${org}/s3/buckets`],
  ['deleteBucket', 'delete', `${org}/s3/buckets/{bucket_id}`],
  ['listAccessKeys', 'get', `${org}/s3/access-keys`],
  ['getS3Quota', 'get', `${org}/s3/quota`],
  ['getBilling', 'get', `${org}/billing`],
  ['getInvoice', 'get', `${org}/invoices/{invoice_id}`],
  ['revokeApiToken', 'delete', `${org}/api-tokens/{token_id}`],
  ['getOperation', 'get', `${org}/operations/{operation_id}`],
  ['cancelOperation', 'post', `${org}/operations/{operation_id}/cancel`],
  ['listAuditEvents', 'get', `${org}/audit-events`],
  // docs/architecture.md: whose credential this is, outside the organization paths
  ['getAccount', 'get', '/v1/account'],
  // docs/architecture.md: outbound events
  ['listEvents', 'get', `${org}/events`],
  ['getEvent', 'get', `${org}/events/{event_id}`],
  ['listWebhookEndpoints', 'get', `${org}/webhook-endpoints`],
  ['createWebhookEndpoint', 'post', `${org}/webhook-endpoints`],
  ['getWebhookEndpoint', 'get', `${org}/webhook-endpoints/{endpoint_id}`],
  ['updateWebhookEndpoint', 'patch', `${org}/webhook-endpoints/{endpoint_id}`],
  ['deleteWebhookEndpoint', 'delete', `${org}/webhook-endpoints/{endpoint_id}`],
  ['rotateWebhookEndpointSecret', 'post', `${org}/webhook-endpoints/{endpoint_id}/rotate-secret`],
  ['testWebhookEndpoint', 'post', `${org}/webhook-endpoints/{endpoint_id}/test`],
  ['listWebhookEndpointDeliveries', 'get', `${org}/webhook-endpoints/{endpoint_id}/deliveries`],
  ['resendWebhookEndpointDelivery', 'post', `${org}/webhook-endpoints/{endpoint_id}/deliveries/{delivery_id}/resend`],
];

/** Operations outside the organization paths, taking no credential (decided by us: the interface is silent on probes). */
const probes: Array<[string, string, string]> = [
  ['getHealth', 'get', '/healthz'],
  ['getReadiness', 'get', '/readyz'],
];

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
const document = loadBundle();

function findOperation(operationId: string): { method: string; path: string; operation: Record<string, unknown> } | undefined {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method] as Record<string, unknown> | undefined;
      if (operation?.operationId === operationId) return { method, path, operation };
    }
  }
  return undefined;
}

describe('operations', () => {
  test.each(operations)('%s is %s %s', (operationId, method, path) => {
    const found = findOperation(operationId);
    expect(found, `${operationId} is missing`).toBeDefined();
    expect({ method: found!.method, path: found!.path }).toEqual({ method, path });
  });

  test('the contract has no operation beyond these', () => {
    const declared = Object.values(document.paths).flatMap((item) =>
      HTTP_METHODS.flatMap((method) => {
        const operation = item[method] as { operationId?: string } | undefined;
        return operation ? [operation.operationId] : [];
      }),
    );
    expect(declared.sort()).toEqual([...operations, ...probes].map(([operationId]) => operationId).sort());
  });

  test.each(probes)('%s is %s %s, takes no credential, and says so', (operationId, method, path) => {
    const found = findOperation(operationId)!;
    expect({ method: found.method, path: found.path }).toEqual({ method, path });
    expect(found.operation.security).toEqual([]);
    expect(found.operation['x-required-scope']).toBe('none');
  });

  test.each(operations)('%s requires the scope its method implies', (operationId, method) => {
    const { operation } = findOperation(operationId)!;
    expect(operation['x-required-scope']).toBe(method === 'get' ? 'read' : 'write');
  });

  test.each(operations.filter(([, method]) => method === 'post'))('%s takes an Idempotency-Key header', (operationId) => {
    const { operation } = findOperation(operationId)!;
    const parameters = (operation.parameters ?? []) as Array<{ $ref?: string }>;
    expect(parameters.map((parameter) => parameter.$ref)).toContain('#/components/parameters/IdempotencyKey');
  });

  test.each(operations)('%s answers errors as problem+json, including 400, 401, 403, 404, 429 and 500', (operationId) => {
    const { operation } = findOperation(operationId)!;
    const responses = operation.responses as Record<string, { $ref?: string; content?: Record<string, unknown> }>;
    for (const status of ['400', '401', '403', '404', '429', '500']) expect(Object.keys(responses)).toContain(status);
    for (const [status, response] of Object.entries(responses)) {
      if (Number(status) < 400) continue;
      const resolved = response.$ref ? resolveResponse(response.$ref) : response;
      expect(Object.keys(resolved.content ?? {}), `${operationId} ${status}`).toEqual(['application/problem+json']);
    }
  });
});

function resolveResponse(ref: string): { content?: Record<string, unknown> } {
  const name = ref.split('/').pop()!;
  return (document.components as unknown as { responses: Record<string, { content?: Record<string, unknown> }> }).responses[name]!;
}
