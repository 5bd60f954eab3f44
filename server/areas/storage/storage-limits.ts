/**
 * The object-storage figures the platform decides, which the storage contract states to its users: the
 * ceiling an organization starts with, the plan's object cap, and how long a soft-deleted
 * bucket is kept. The platform floor and maximum of the ceiling (1 GiB to 1 PiB) are bounds
 * of the contract's schema, enforced by request validation.
 */
const GiB = 1024 ** 3;

/** The ceiling of an organization that never set one: 100 GiB. */
export const DEFAULT_HARD_BYTES = 100 * GiB;
/** The object cap of the standard plan (every object version and delete marker counts). */
export const PLAN_MAX_OBJECTS = 10_000_000;
/** The warning threshold, 90% of the ceiling rounded down (exactly: 9 × 1 PiB is beyond 2^53). */
export const softBytesOf = (hardBytes: number): number => Number((BigInt(hardBytes) * 9n) / 10n);
/** A soft-deleted bucket is purged this long after it was deleted. */
export const SOFT_DELETE_RETENTION_MS = 30 * 24 * 3_600_000;
/** Bytes in the GB of the storage_gb_month meter (binary, as object stores bill it). */
export const BYTES_PER_BILLED_GB = GiB;
