import { execFile } from 'node:child_process';
import { readFile, realpath, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { QemuLayout } from './layout.ts';

const run = promisify(execFile);

/** The test image's kernel and initramfs, booted directly (its disk is a blank one). */
export interface KernelBoot {
  boot: 'kernel';
  kernel: string;
  initrd: string;
  append: string;
}

/** A registered cloud image: its disk boots itself, and each server's disk is an overlay on it. */
export interface DiskBoot {
  boot: 'disk';
  file: string;
}

export type ImageSource = KernelBoot | DiskBoot;

/** The image ids the tiny test image answers to in every region (the QEMU catalogue lists them). */
export const TEST_IMAGE_IDS = ['tiny', 'rescue-live'];

/**
 * The images this host can boot, per region: a qcow2 file an operator registered under
 * DATA_DIR/qemu/images/<region>/<image id>.qcow2 (scripts/qemu/register-image.sh), else the tiny
 * test image (scripts/qemu/build-test-image.sh) for the ids of TEST_IMAGE_IDS. The test image is
 * also the rescue system, whatever the server's own image.
 */
export function createImageSources(layout: QemuLayout, testImageDir: string) {
  return {
    async resolve(regionId: string, imageId: string): Promise<ImageSource | undefined> {
      // Ids are the catalogue's (lowercase letters, digits, dots, hyphens): no path can be made of them.
      if (!/^[a-z0-9][a-z0-9-]*$/.test(regionId) || !/^[a-z0-9][a-z0-9.-]*$/.test(imageId)) return undefined;
      try {
        // The registered name is a link to a file of its own version: a server's overlay names
        // that file, so registering a new version later never changes an existing server's disk.
        return { boot: 'disk', file: await realpath(path.join(layout.imagesDir, regionId, `${imageId}.qcow2`)) };
      } catch {
        return TEST_IMAGE_IDS.includes(imageId) ? this.testImage() : undefined;
      }
    },

    /** The test image, if it has been built. */
    async testImage(): Promise<KernelBoot | undefined> {
      try {
        const manifest = JSON.parse(await readFile(path.join(testImageDir, 'image.json'), 'utf8')) as {
          kernel: string;
          initrd: string;
          append: string;
        };
        const kernel = path.resolve(testImageDir, manifest.kernel);
        const initrd = path.resolve(testImageDir, manifest.initrd);
        await Promise.all([stat(kernel), stat(initrd)]);
        return { boot: 'kernel', kernel, initrd, append: manifest.append };
      } catch {
        return undefined;
      }
    },
  };
}

export type ImageSources = ReturnType<typeof createImageSources>;

/** Disk files, by qemu-img. */
export function diskTool(imgBinary: string) {
  const info = async (file: string) =>
    JSON.parse((await run(imgBinary, ['info', '--output=json', '-U', file])).stdout) as { 'virtual-size': number; format: string };
  return {
    info,

    /**
     * Makes a server's disk of `sizeGb`: a qcow2 overlay on `backing` (the image stays untouched
     * and shared), or a blank qcow2. Made beside the target and renamed onto it, so that a crash
     * leaves either no disk or a whole one.
     */
    async create(target: string, sizeGb: number, backing: string | undefined): Promise<void> {
      const partial = `${target}.partial`;
      await rm(partial, { force: true });
      const backingArgs = backing ? ['-b', backing, '-F', 'qcow2'] : [];
      await run(imgBinary, ['create', '-q', '-f', 'qcow2', ...backingArgs, partial, `${sizeGb}G`]);
      await rename(partial, target);
    },

    /** Grows a disk (QEMU not running on it). */
    async grow(file: string, sizeGb: number): Promise<void> {
      await run(imgBinary, ['resize', '-q', file, `${sizeGb}G`]);
    },

    /** The disk's size in whole GiB. */
    async sizeGb(file: string): Promise<number> {
      return Math.ceil((await info(file))['virtual-size'] / 2 ** 30);
    },
  };
}

export type DiskTool = ReturnType<typeof diskTool>;
