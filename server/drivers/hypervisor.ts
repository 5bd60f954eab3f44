/** The hypervisor driver: filled in by the compute area. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface HypervisorDriver {}
