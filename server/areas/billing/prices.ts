import type { components } from '../../../generated/openapi.ts';
import type { Meter } from '../area.ts';

export type BillingPrice = components['schemas']['BillingPrice'];

/** The price list, in millionths of a euro per unit. */
export const PRICES: ReadonlyArray<BillingPrice & { meter: Meter }> = [
  { meter: 'vcpu_hour', unit: 'hour', unit_amount_micro_eur: 6000 },
  { meter: 'memory_gb_hour', unit: 'gb_hour', unit_amount_micro_eur: 3000 },
  { meter: 'disk_gb_hour', unit: 'gb_hour', unit_amount_micro_eur: 60 },
  { meter: 'public_ip_hour', unit: 'hour', unit_amount_micro_eur: 1000 },
  { meter: 'storage_gb_month', unit: 'gb_month', unit_amount_micro_eur: 20000 },
  { meter: 'egress_gb', unit: 'gb', unit_amount_micro_eur: 10000 },
];

const MICRO_EUR_PER_CENT = 10_000;

/** What a quantity of a meter costs, in cents (rounded to the nearest cent). */
export function priceInCents(meter: string, quantity: number): number {
  const price = PRICES.find((entry) => entry.meter === meter);
  return price ? Math.round((quantity * price.unit_amount_micro_eur) / MICRO_EUR_PER_CENT) : 0;
}

export const PLAN = { slug: 'standard', display_name: 'Standard' } as const;
