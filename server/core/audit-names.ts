import type { OperationId } from '../../generated/operations.ts';
import type { AuditResourceType } from './audit.ts';

/**
 * The audit action and resource of every operation that leaves audit events, the one table of
 * them: a request's event, succeeded, denied or failed, takes its names from here
 * (core/request-audit.ts). Events of the platform's own doing (a scheduled restart, a purge)
 * name theirs where they are recorded.
 */
export const auditNames: Partial<Record<OperationId, { action: string; resourceType: AuditResourceType; idParam?: string }>> = {
  createVm: { action: 'vm.create', resourceType: 'vm' },
  deleteVm: { action: 'vm.delete', resourceType: 'vm', idParam: 'vm_id' },
  startVm: { action: 'vm.start', resourceType: 'vm', idParam: 'vm_id' },
  stopVm: { action: 'vm.stop', resourceType: 'vm', idParam: 'vm_id' },
  rebootVm: { action: 'vm.reboot', resourceType: 'vm', idParam: 'vm_id' },
  resizeVm: { action: 'vm.resize', resourceType: 'vm', idParam: 'vm_id' },
  rebuildVm: { action: 'vm.rebuild', resourceType: 'vm', idParam: 'vm_id' },
  rescueVm: { action: 'vm.rescue', resourceType: 'vm', idParam: 'vm_id' },
  unrescueVm: { action: 'vm.unrescue', resourceType: 'vm', idParam: 'vm_id' },
  setVmProtection: { action: 'vm.set_protection', resourceType: 'vm', idParam: 'vm_id' },
  setVmFirewall: { action: 'vm.set_firewall', resourceType: 'vm', idParam: 'vm_id' },
  requestConsole: { action: 'vm.request_console', resourceType: 'vm', idParam: 'vm_id' },
  // A read that hands out access: its success is recorded, its refusal is not (reads never are).
  collectConsole: { action: 'vm.collect_console', resourceType: 'vm', idParam: 'vm_id' },
  scheduleVmRestart: { action: 'scheduled_action.create', resourceType: 'scheduled_action' },
  cancelScheduledAction: { action: 'scheduled_action.cancel', resourceType: 'scheduled_action', idParam: 'schedule_id' },
  allocatePublicIp: { action: 'public_ip.allocate', resourceType: 'public_ip' },
  releasePublicIp: { action: 'public_ip.release', resourceType: 'public_ip', idParam: 'public_ip_id' },
  associatePublicIp: { action: 'public_ip.associate', resourceType: 'public_ip', idParam: 'public_ip_id' },
  disassociatePublicIp: { action: 'public_ip.disassociate', resourceType: 'public_ip', idParam: 'public_ip_id' },
  createSshKey: { action: 'ssh_key.create', resourceType: 'ssh_key' },
  deleteSshKey: { action: 'ssh_key.delete', resourceType: 'ssh_key', idParam: 'ssh_key_id' },
  createBucket: { action: 'bucket.create', resourceType: 'bucket' },
  deleteBucket: { action: 'bucket.delete', resourceType: 'bucket', idParam: 'bucket_id' },
  setBucketQuota: { action: 'bucket.set_quota', resourceType: 'bucket', idParam: 'bucket_id' },
  restoreBucket: { action: 'bucket.restore', resourceType: 'bucket', idParam: 'bucket_id' },
  createAccessKey: { action: 'access_key.create', resourceType: 'access_key' },
  revokeAccessKey: { action: 'access_key.revoke', resourceType: 'access_key', idParam: 'key_id' },
  setQuota: { action: 's3_quota.set', resourceType: 's3_quota' },
  setBillingBudget: { action: 'billing.set_budget', resourceType: 'billing' },
  createApiToken: { action: 'api_token.create', resourceType: 'api_token' },
  revokeApiToken: { action: 'api_token.revoke', resourceType: 'api_token', idParam: 'token_id' },
  cancelOperation: { action: 'operation.cancel', resourceType: 'operation', idParam: 'operation_id' },
};
