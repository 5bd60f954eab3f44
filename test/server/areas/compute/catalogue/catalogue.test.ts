// The catalogue: the shipped default, the operator's own file (CATALOGUE_FILE), its checks, and
// listRegions / listImages on the real server. A bad file stopping `npm start`: catalogue.system.test.ts.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  buildCatalogue,
  CatalogueError,
  DEFAULT_CATALOGUE_FILE,
  loadCatalogue,
} from '../../../../../server/areas/compute/catalogue/catalogue.ts';
import { startTestServer, type TestServer } from '../../../../support/server.ts';
import { vmRequest } from '../fixtures.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'catalogue-'));
const defaultData = () => JSON.parse(readFileSync(DEFAULT_CATALOGUE_FILE, 'utf8'));

describe('the default catalogue', () => {
  test('ships at least two replicated regions and one single-copy region, several images each', () => {
    const catalogue = loadCatalogue();
    const replicated = catalogue.regions.filter((region) => region.disk_redundancy === 'replicated');
    const singleCopy = catalogue.regions.filter((region) => region.disk_redundancy === 'single_copy');
    expect(replicated.map((region) => region.id)).toEqual(['ams1', 'fra1']);
    expect(singleCopy.map((region) => region.id)).toEqual(['nbg-sc1']);
    for (const region of catalogue.regions) {
      expect(region.images.length, region.id).toBeGreaterThanOrEqual(3);
      expect(region.storage_pools.length, region.id).toBeGreaterThanOrEqual(1);
      expect(region.network_profiles.length, region.id).toBeGreaterThanOrEqual(1);
    }
    expect(catalogue.image('fra1', 'rescue-live')).toEqual({
      id: 'rescue-live',
      name: 'Rescue system',
      min_disk_gb: 1,
      min_ram_mb: 256,
      os_distro: null,
      os_version: null,
    });
  });
});

describe('checks of a catalogue file', () => {
  const broken = (change: (data: any) => void) => {
    const data = defaultData();
    change(data);
    return () => buildCatalogue(data);
  };

  test('each entry is checked, and the message names it', () => {
    expect(broken((data) => (data.regions[0].disk_redundancy = 'mirrored'))).toThrow(
      /regions\[0\] \(fra1\)\.disk_redundancy must be one of replicated, single_copy, not "mirrored"/,
    );
    expect(broken((data) => (data.regions[2].images[0].min_disk_gb = 0))).toThrow(
      /regions\[2\] \(nbg-sc1\)\.images\[0\]\.min_disk_gb must be an integer from 1 to 4096/,
    );
    expect(broken((data) => (data.regions[1].id = 'AMS 1'))).toThrow(/regions\[1\]\.id must be a region id/);
    expect(broken((data) => (data.regions[1].id = 'fra1'))).toThrow(/regions has the region id fra1 twice/);
    expect(broken((data) => (data.regions[0].images[1].id = 'debian-12'))).toThrow(/image id debian-12 twice/);
    expect(broken((data) => delete data.regions[0].images[0].os_version)).toThrow(/os_version is required/);
    expect(broken((data) => (data.regions[0].storage_pools = []))).toThrow(/storage_pools must be a list of 1 to 32 entries/);
    expect(broken((data) => (data.regions[0].colour = 'blue'))).toThrow(/unknown field colour/);
    expect(broken((data) => (data.regions = []))).toThrow(/regions must be a list of 1 to 200 entries/);
  });

  test('a file that cannot be read or is not JSON is refused with its name', () => {
    const file = path.join(dir, 'not-json.json');
    writeFileSync(file, '{ regions: ');
    expect(() => loadCatalogue(file)).toThrow(CatalogueError);
    expect(() => loadCatalogue(file)).toThrow(`The compute catalogue ${file} is not valid JSON`);
    expect(() => loadCatalogue(path.join(dir, 'missing.json'))).toThrow(/cannot be read/);
  });
});

describe('listRegions and listImages', () => {
  let server: TestServer;
  let custom: TestServer;
  beforeAll(async () => {
    const file = path.join(dir, 'custom.json');
    writeFileSync(
      file,
      JSON.stringify({
        regions: [
          {
            id: 'lab1',
            name: 'Lab 1',
            disk_redundancy: 'single_copy',
            storage_pools: [{ id: 'lab1-disk', name: 'Disk' }],
            network_profiles: [{ id: 'lab1-net', name: 'Lab network' }],
            images: [{ id: 'alpine-3.20', name: 'Alpine 3.20', min_disk_gb: 10, min_ram_mb: 512, os_distro: 'alpine', os_version: '3.20' }],
          },
        ],
      }),
    );
    [server, custom] = await Promise.all([startTestServer(), startTestServer({ CATALOGUE_FILE: file })]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), custom?.close()]);
  });

  test('regions in id order with their pools and profiles, in pages', async () => {
    const all = await server.org.call('GET', '/compute/regions');
    expect(all.status).toBe(200);
    expect(all.body.next_cursor).toBeNull();
    expect(all.body.items.map((region: { id: string }) => region.id)).toEqual(['ams1', 'fra1', 'nbg-sc1']);
    expect(all.body.items[1]).toEqual({
      id: 'fra1',
      name: 'Frankfurt 1',
      disk_redundancy: 'replicated',
      storage_pools: [
        { id: 'fra1-ssd', name: 'SSD' },
        { id: 'fra1-nvme', name: 'NVMe' },
      ],
      network_profiles: [
        { id: 'fra1-standard', name: 'Standard network' },
        { id: 'fra1-private', name: 'Private network only' },
      ],
    });
    expect(all.body.items[2].disk_redundancy).toBe('single_copy');

    const first = await server.org.call('GET', '/compute/regions?limit=2');
    expect(first.body.items.map((region: { id: string }) => region.id)).toEqual(['ams1', 'fra1']);
    const second = await server.org.call('GET', `/compute/regions?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.items.map((region: { id: string }) => region.id)).toEqual(['nbg-sc1']);
    expect(second.body.next_cursor).toBeNull();
    expect((await server.org.call('GET', '/compute/regions?cursor=garbage')).body.code).toBe('invalid_cursor');
  });

  test('images of one region, in id order, every field present', async () => {
    const images = await server.org.call('GET', '/compute/images?region=fra1');
    expect(images.status).toBe(200);
    expect(images.body.items.map((image: { id: string }) => image.id)).toEqual([
      'debian-12',
      'rescue-live',
      'rocky-9',
      'ubuntu-22.04',
      'ubuntu-24.04',
    ]);
    expect(images.body.items[2]).toEqual({
      id: 'rocky-9',
      name: 'Rocky Linux 9',
      min_disk_gb: 20,
      min_ram_mb: 1024,
      os_distro: 'rocky',
      os_version: '9',
    });
    expect(images.body.items[1]).toMatchObject({ os_distro: null, os_version: null });
    expect((await server.org.call('GET', '/compute/images?region=nbg-sc1')).body.items.map((image: { id: string }) => image.id)).toEqual([
      'debian-12',
      'rescue-live',
      'ubuntu-24.04',
    ]);

    const page = await server.org.call('GET', '/compute/images?region=fra1&limit=2');
    const next = await server.org.call('GET', `/compute/images?region=fra1&limit=2&cursor=${page.body.next_cursor}`);
    expect(next.body.items.map((image: { id: string }) => image.id)).toEqual(['rocky-9', 'ubuntu-22.04']);
    // A cursor of fra1's images is not one of ams1's.
    expect((await server.org.call('GET', `/compute/images?region=ams1&cursor=${page.body.next_cursor}`)).body.code).toBe('invalid_cursor');
  });

  test('region is required (400), well-formed but unknown is 404', async () => {
    const missing = await server.org.call('GET', '/compute/images');
    expect(missing.status).toBe(400);
    expect(missing.body.errors[0].pointer).toBe('/query/region');
    expect((await server.org.call('GET', '/compute/images?region=Fra%201')).status).toBe(400);
    const unknown = await server.org.call('GET', '/compute/images?region=lon1');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: 'not_found', detail: 'No region lon1; list the regions with listRegions.' });
  });

  test('CATALOGUE_FILE replaces the default: its regions, images and rules', async () => {
    expect((await custom.org.call('GET', '/compute/regions')).body.items.map((region: { id: string }) => region.id)).toEqual(['lab1']);
    expect((await custom.org.call('GET', '/compute/images?region=lab1')).body.items.map((image: { id: string }) => image.id)).toEqual([
      'alpine-3.20',
    ]);
    expect((await custom.org.call('GET', '/compute/images?region=fra1')).status).toBe(404);
    const created = await custom.org.call('POST', '/compute/vms', {
      body: vmRequest({ region: 'lab1', image: 'alpine-3.20', storage_pool: 'lab1-disk', network_profile: 'lab1-net' }),
    });
    expect(created.status).toBe(202);
    expect(created.body.vm.allowed_actions).toEqual(['start', 'stop', 'reboot', 'console']);
    expect((await custom.waitForOperation(custom.org, created.body.operation.id)).state).toBe('succeeded');
  });
});
