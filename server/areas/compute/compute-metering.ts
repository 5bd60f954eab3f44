import type { Queryable } from '../../db/pool.ts';
import type { MeteredResource, UsageSource } from '../area.ts';

/**
 * What compute bills by the hour: an instance while it is powered (vCPUs, memory in GB and disk
 * in GB per hour), and a public IP from the moment its address is allocated until it is
 * released, associated or not.
 *
 * An instance is metered per uninterrupted powered run (its id and `powered_since`): metering
 * accrues from a resource's last sighting, so a stopped stretch must never join two runs.
 */
export const computeUsage: UsageSource = {
  async meteredResources(db: Queryable): Promise<MeteredResource[]> {
    const { rows: vms } = await db.query<{
      org_id: string;
      id: string;
      powered_since: Date;
      vcpus: number;
      memory_mb: number;
      disk_gb: number;
    }>(`SELECT org_id, id, powered_since, vcpus, memory_mb, disk_gb FROM vms WHERE deleted_at IS NULL AND powered_since IS NOT NULL`);
    const { rows: ips } = await db.query<{ org_id: string; id: string }>(
      `SELECT org_id, id FROM public_ips WHERE released_at IS NULL AND address IS NOT NULL`,
    );
    return [
      ...vms.map((vm) => ({
        orgId: vm.org_id,
        resourceType: 'vm',
        resourceId: `${vm.id}:${vm.powered_since.getTime()}`,
        ratesPerHour: { vcpu_hour: vm.vcpus, memory_gb_hour: vm.memory_mb / 1024, disk_gb_hour: vm.disk_gb },
        size: `${vm.vcpus} vCPU, ${vm.memory_mb / 1024} GB memory, ${vm.disk_gb} GB disk`,
      })),
      ...ips.map((ip) => ({ orgId: ip.org_id, resourceType: 'public_ip', resourceId: ip.id, ratesPerHour: { public_ip_hour: 1 } })),
    ];
  },
};
