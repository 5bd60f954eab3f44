import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { components } from '../../../../generated/openapi.ts';
import { ConfigError } from '../../../config.ts';
import { decodeCursor, DEFAULT_PAGE_SIZE, page } from '../../../core/pagination.ts';

type RegionOut = components['schemas']['RegionOut'];
type ImageOut = components['schemas']['ImageOut'];

/** A network profile; `public_network` says whether its instances get public addresses. */
export interface NetworkProfile {
  id: string;
  name: string;
  public_network: boolean;
}

export interface Region {
  id: string;
  name: string;
  disk_redundancy: RegionOut['disk_redundancy'];
  /** The console the region's hypervisor offers. */
  console_type: 'vnc' | 'serial';
  storage_pools: Array<{ id: string; name: string }>;
  network_profiles: NetworkProfile[];
  /** In id order. */
  images: ImageOut[];
}

/** The regions, their images, storage pools and network profiles, in id order. */
export interface Catalogue {
  regions: Region[];
  region(id: string): Region | undefined;
  image(regionId: string, imageId: string): ImageOut | undefined;
}

export const DEFAULT_CATALOGUE_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'catalogue.default.json');

/** A configuration error: start-up stops with its message. */
export class CatalogueError extends ConfigError {}

/**
 * Reads the catalogue the operator configured (CATALOGUE_FILE), or the shipped default, and
 * checks every entry: a bad catalogue stops start-up with a message naming the file and entry.
 */
export function loadCatalogue(file: string = DEFAULT_CATALOGUE_FILE): Catalogue {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CatalogueError(`The compute catalogue ${file} cannot be read: ${(error as Error).message}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new CatalogueError(`The compute catalogue ${file} is not valid JSON: ${(error as Error).message}`);
  }
  try {
    return buildCatalogue(data);
  } catch (error) {
    if (error instanceof CatalogueError) throw new CatalogueError(`The compute catalogue ${file} is invalid: ${error.message}`);
    throw error;
  }
}

// The same shapes the contract gives RegionOut, ImageOut and their references.
const REGION_ID = /^[a-z0-9][a-z0-9-]{1,31}$/;
const REF_ID = /^[a-z0-9][a-z0-9-]{1,62}$/;
const IMAGE_ID = /^[a-z0-9][a-z0-9.-]{0,62}$/;
const DISPLAY_NAME = /^[^\x00-\x1F]{1,100}$/;
const OS_DISTRO = /^[a-z0-9][a-z0-9._-]{0,31}$/;
const OS_VERSION = /^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$/;

/** Checks and normalises catalogue data (exported for tests). */
export function buildCatalogue(data: unknown): Catalogue {
  const root = object(data, 'the document');
  onlyKeys(root, ['regions'], 'the document');
  const regionsData = list(root.regions, 'regions', 1, 200);
  const regions = regionsData.map((value, index) => region(value, `regions[${index}]`));
  unique(
    regions.map((entry) => entry.id),
    'regions',
    'region id',
  );
  regions.sort((a, b) => compare(a.id, b.id));
  const byId = new Map(regions.map((entry) => [entry.id, entry]));
  return {
    regions,
    region: (id) => byId.get(id),
    image: (regionId, imageId) => byId.get(regionId)?.images.find((image) => image.id === imageId),
  };
}

function region(value: unknown, where: string): Region {
  const entry = object(value, where);
  onlyKeys(entry, ['id', 'name', 'disk_redundancy', 'console_type', 'storage_pools', 'network_profiles', 'images'], where);
  const id = text(
    entry.id,
    `${where}.id`,
    REGION_ID,
    'a region id: 2 to 32 lowercase letters, digits or hyphens, starting with a letter or digit',
  );
  // Further messages name the region too: `regions[2] (nbg-sc1).images[0].min_disk_gb …`.
  const at = `${where} (${id})`;
  const storagePools = list(entry.storage_pools, `${at}.storage_pools`, 1, 32).map((pool, index) =>
    reference(pool, `${at}.storage_pools[${index}]`, false),
  );
  const networkProfiles = list(entry.network_profiles, `${at}.network_profiles`, 1, 32).map((profile, index) =>
    reference(profile, `${at}.network_profiles[${index}]`, true),
  );
  const images = list(entry.images, `${at}.images`, 1, 200).map((image, index) => imageOf(image, `${at}.images[${index}]`));
  unique(
    storagePools.map((pool) => pool.id),
    `${at}.storage_pools`,
    'storage pool id',
  );
  unique(
    networkProfiles.map((profile) => profile.id),
    `${at}.network_profiles`,
    'network profile id',
  );
  unique(
    images.map((image) => image.id),
    `${at}.images`,
    'image id',
  );
  images.sort((a, b) => compare(a.id, b.id));
  return {
    id,
    name: text(entry.name, `${at}.name`, DISPLAY_NAME, 'a display name of 1 to 100 characters'),
    disk_redundancy: oneOf(entry.disk_redundancy, `${at}.disk_redundancy`, ['replicated', 'single_copy'] as const),
    console_type: entry.console_type === undefined ? 'serial' : oneOf(entry.console_type, `${at}.console_type`, ['vnc', 'serial'] as const),
    storage_pools: storagePools.map(({ id, name }) => ({ id, name })),
    network_profiles: networkProfiles,
    images,
  };
}

function reference(value: unknown, where: string, isProfile: boolean): NetworkProfile {
  const entry = object(value, where);
  onlyKeys(entry, isProfile ? ['id', 'name', 'public_network'] : ['id', 'name'], where);
  let publicNetwork = true;
  if (isProfile && entry.public_network !== undefined) {
    if (typeof entry.public_network !== 'boolean') throw new CatalogueError(`${where}.public_network must be true or false`);
    publicNetwork = entry.public_network;
  }
  return {
    id: text(entry.id, `${where}.id`, REF_ID, 'an id of 2 to 63 lowercase letters, digits or hyphens, starting with a letter or digit'),
    name: text(entry.name, `${where}.name`, DISPLAY_NAME, 'a display name of 1 to 100 characters'),
    public_network: publicNetwork,
  };
}

function imageOf(value: unknown, where: string): ImageOut {
  const entry = object(value, where);
  onlyKeys(entry, ['id', 'name', 'min_disk_gb', 'min_ram_mb', 'os_distro', 'os_version'], where);
  for (const key of ['os_distro', 'os_version']) {
    if (!(key in entry))
      throw new CatalogueError(`${where}.${key} is required (null for an image that is not a general-purpose operating system)`);
  }
  return {
    id: text(
      entry.id,
      `${where}.id`,
      IMAGE_ID,
      'an image id of 1 to 63 lowercase letters, digits, dots or hyphens, starting with a letter or digit',
    ),
    name: text(entry.name, `${where}.name`, DISPLAY_NAME, 'a display name of 1 to 100 characters'),
    min_disk_gb: integer(entry.min_disk_gb, `${where}.min_disk_gb`, 1, 4096),
    min_ram_mb: integer(entry.min_ram_mb, `${where}.min_ram_mb`, 128, 262144),
    os_distro:
      entry.os_distro === null
        ? null
        : text(entry.os_distro, `${where}.os_distro`, OS_DISTRO, 'null or a lowercase distribution name of up to 32 characters'),
    os_version:
      entry.os_version === null
        ? null
        : text(
            entry.os_version,
            `${where}.os_version`,
            OS_VERSION,
            'null or a version of up to 32 letters, digits, dots, underscores or hyphens',
          ),
  };
}

function object(value: unknown, where: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new CatalogueError(`${where} must be an object`);
  return value as Record<string, unknown>;
}

function onlyKeys(entry: Record<string, unknown>, keys: string[], where: string): void {
  const unknown = Object.keys(entry).filter((key) => !keys.includes(key));
  if (unknown.length > 0)
    throw new CatalogueError(
      `${where} has unknown field${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')} (allowed: ${keys.join(', ')})`,
    );
}

function list(value: unknown, where: string, min: number, max: number): unknown[] {
  if (!Array.isArray(value) || value.length < min || value.length > max)
    throw new CatalogueError(`${where} must be a list of ${min} to ${max} entries`);
  return value;
}

function text(value: unknown, where: string, pattern: RegExp, what: string): string {
  if (typeof value !== 'string' || !pattern.test(value)) throw new CatalogueError(`${where} must be ${what}, not ${JSON.stringify(value)}`);
  return value;
}

function integer(value: unknown, where: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new CatalogueError(`${where} must be an integer from ${min} to ${max}, not ${JSON.stringify(value)}`);
  }
  return value;
}

function oneOf<T extends string>(value: unknown, where: string, values: readonly T[]): T {
  if (!values.includes(value as T)) throw new CatalogueError(`${where} must be one of ${values.join(', ')}, not ${JSON.stringify(value)}`);
  return value as T;
}

function unique(ids: string[], where: string, what: string): void {
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) throw new CatalogueError(`${where} has the ${what} ${id} twice`);
    seen.add(id);
  }
}

/** Byte order, as the lists promise ("in id order"), independent of the locale. */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// Catalogue entries have no creation time: their cursors carry a fixed key and the entry's id.
const CATALOGUE_KEY = '1970-01-01T00:00:00.000000Z';

/** A page of catalogue entries (already in id order) after the cursor's id. */
export function catalogueListPage<Entry extends { id: string }, Item>(
  list: string,
  entries: Entry[],
  query: { cursor?: string; limit?: number },
  toItem: (entry: Entry) => Item,
) {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE;
  const after = decodeCursor(list, query.cursor, 'text');
  const rest = after ? entries.filter((entry) => compare(entry.id, after.id) > 0) : entries;
  return page(list, rest.slice(0, limit + 1), limit, (entry) => ({ key: CATALOGUE_KEY, id: entry.id }), toItem);
}
