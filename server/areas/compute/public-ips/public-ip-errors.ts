import { conflict, notFound, unprocessable } from '../../../core/errors.ts';

// The public IPs' named errors: the only place their status, code and title are chosen.

export const publicIpNotFound = (publicIpId: string) => notFound(`No public IP ${publicIpId} in this organization.`);

export const publicIpStateConflict = (detail: string) => conflict('public_ip_state_conflict', 'Public IP state conflict', detail);

export const publicIpRegionMismatch = (ip: { id: string; region_id: string }, vm: { id: string; region_id: string }) =>
  unprocessable(
    'public_ip_region_mismatch',
    'Public IP in another region',
    `Public IP ${ip.id} is in ${ip.region_id} but instance ${vm.id} is in ${vm.region_id}; allocate a public IP in ${vm.region_id}.`,
    [{ pointer: '/vm_id', detail: `instance is in region ${vm.region_id}, the public IP in ${ip.region_id}` }],
  );
