import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { components } from '../../../../generated/openapi.ts';
import { ConfigError } from '../../../config.ts';
import type { Meter } from '../../area.ts';

export type BillingPrice = components['schemas']['BillingPrice'];
type BillingPlan = components['schemas']['BillingPlan'];

/** One price of the list: the contract's fields, and the words an invoice line uses for the meter. */
export interface Price extends BillingPrice {
  meter: Meter;
  description: string;
}

/** The price list the platform bills by, from configuration (PRICE_LIST), checked at start-up. */
export interface PriceList {
  currency: string;
  plan: BillingPlan;
  /** In the order of METERS. */
  prices: Price[];
  price(meter: string): Price | undefined;
}

export const DEFAULT_PRICE_LIST_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'price-list.default.json');

/** Every meter the platform measures, each priced exactly once, in the order invoices list them. */
export const METERS: readonly Meter[] = ['vcpu_hour', 'memory_gb_hour', 'disk_gb_hour', 'public_ip_hour', 'storage_gb_month', 'egress_gb'];
const UNITS: Record<Meter, BillingPrice['unit']> = {
  vcpu_hour: 'hour',
  memory_gb_hour: 'gb_hour',
  disk_gb_hour: 'gb_hour',
  public_ip_hour: 'hour',
  storage_gb_month: 'gb_month',
  egress_gb: 'gb',
};

export class PriceListError extends ConfigError {}

/** Reads and checks the price list; a bad one stops start-up with a message naming the file and entry. */
export function loadPriceList(file: string = DEFAULT_PRICE_LIST_FILE): PriceList {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new PriceListError(`The price list ${file} cannot be read as JSON: ${(error as Error).message}`);
  }
  try {
    return buildPriceList(data);
  } catch (error) {
    if (error instanceof PriceListError) throw new PriceListError(`The price list ${file} is invalid: ${error.message}`);
    throw error;
  }
}

/** Checks price list data (exported for tests). */
export function buildPriceList(data: unknown): PriceList {
  const root = record(data, 'the document');
  onlyKeys(root, ['currency', 'plan', 'prices'], 'the document');
  if (typeof root.currency !== 'string' || !/^[a-z]{3}$/.test(root.currency))
    throw new PriceListError('currency must be an ISO 4217 code in lowercase, such as "eur"');
  if (root.currency !== 'eur') throw new PriceListError('currency must be "eur": prices are in millionths of a euro');
  const plan = record(root.plan, 'plan');
  onlyKeys(plan, ['slug', 'display_name'], 'plan');
  if (typeof plan.slug !== 'string' || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(plan.slug))
    throw new PriceListError('plan.slug must be a lowercase slug');
  if (typeof plan.display_name !== 'string' || !/^[^\x00-\x1F]{1,100}$/.test(plan.display_name))
    throw new PriceListError('plan.display_name must be 1 to 100 characters');
  if (!Array.isArray(root.prices)) throw new PriceListError('prices must be a list');
  const byMeter = new Map<Meter, Price>();
  root.prices.forEach((value, index) => {
    const at = `prices[${index}]`;
    const entry = record(value, at);
    onlyKeys(entry, ['meter', 'unit', 'unit_amount_micro_eur', 'description'], at);
    const meter = entry.meter as Meter;
    if (!METERS.includes(meter)) throw new PriceListError(`${at}.meter must be one of ${METERS.join(', ')}`);
    if (byMeter.has(meter)) throw new PriceListError(`${at}: ${meter} is priced twice`);
    if (entry.unit !== UNITS[meter]) throw new PriceListError(`${at}.unit must be ${UNITS[meter]} for ${meter}`);
    const amount = entry.unit_amount_micro_eur;
    if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount < 0)
      throw new PriceListError(`${at}.unit_amount_micro_eur must be a whole number of millionths of a euro, 0 or more`);
    if (typeof entry.description !== 'string' || !/^[^\x00-\x1F]{1,100}$/.test(entry.description))
      throw new PriceListError(`${at}.description must be 1 to 100 characters`);
    byMeter.set(meter, { meter, unit: UNITS[meter], unit_amount_micro_eur: amount, description: entry.description });
  });
  const missing = METERS.filter((meter) => !byMeter.has(meter));
  if (missing.length > 0) throw new PriceListError(`prices has no entry for ${missing.join(', ')}`);
  const prices = METERS.map((meter) => byMeter.get(meter)!);
  return {
    currency: root.currency,
    plan: { slug: plan.slug, display_name: plan.display_name },
    prices,
    price: (meter) => byMeter.get(meter as Meter),
  };
}

function record(value: unknown, at: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new PriceListError(`${at} must be an object`);
  return value as Record<string, unknown>;
}

function onlyKeys(value: Record<string, unknown>, keys: string[], at: string): void {
  const unknown = Object.keys(value).filter((key) => !keys.includes(key));
  if (unknown.length > 0) throw new PriceListError(`${at} has unknown fields: ${unknown.join(', ')}`);
}

const MICRO_EUR_PER_CENT = 10_000;

/**
 * What a quantity of a meter costs, in cents, rounded half up to the cent. Computed exactly from
 * the decimal quantity (6 places) with big integers, so that an invoice line is reproducible.
 */
export function priceInCents(prices: PriceList, meter: string, quantity: string): number {
  const price = prices.price(meter);
  if (!price) return 0;
  const micros = decimalToMicros(quantity);
  // quantity (micro-units) × price (micro-EUR per unit) = 10^-12 EUR; a cent is 10^10 of those.
  const total = micros * BigInt(price.unit_amount_micro_eur);
  const unit = BigInt(MICRO_EUR_PER_CENT) * 1_000_000n;
  return Number((total + unit / 2n) / unit);
}

/** A non-negative decimal string as millionths (6 places, the rest dropped). */
export function decimalToMicros(quantity: string): bigint {
  const [whole = '0', fraction = ''] = quantity.split('.');
  return BigInt(whole || '0') * 1_000_000n + BigInt((fraction + '000000').slice(0, 6));
}
