import { PermanentBackendError } from '../errors.ts';
import type { RgwCredentials, SignedHttp } from './signed-http.ts';

/**
 * The few S3 calls the driver makes itself, signed as one of the organization's users (the
 * Admin Ops API cannot create a bucket, enable its versioning or list its versions).
 */
export interface BucketS3 {
  /** Creates the bucket as `as`; false when the name is already taken in the tenant (by any user). */
  createBucket(as: RgwCredentials, name: string): Promise<boolean>;
  setVersioning(as: RgwCredentials, name: string, enabled: boolean): Promise<void>;
  /** Delete markers in the bucket (RGW's stats count object versions only), up to `limit`. */
  deleteMarkers(as: RgwCredentials, name: string, limit: number): Promise<number>;
  /** Whether the bucket holds any object version or delete marker. */
  holdsAnything(as: RgwCredentials, name: string): Promise<boolean>;
  /** The bucket's policy document, or null when it has none. */
  getPolicy(as: RgwCredentials, name: string): Promise<string | null>;
  putPolicy(as: RgwCredentials, name: string, policy: string): Promise<void>;
}

const VERSIONING_BODY = (enabled: boolean) =>
  `<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>${enabled ? 'Enabled' : 'Suspended'}</Status></VersioningConfiguration>`;

export function createBucketS3(http: SignedHttp): BucketS3 {
  const listVersions = async (as: RgwCredentials, name: string, limit: number): Promise<string> => {
    const response = await http.send(as, { method: 'GET', path: `/${name}`, query: { versions: '', 'max-keys': String(limit) } });
    if (response.status !== 200) throw new PermanentBackendError('object store', `list versions answered ${response.status}`);
    return response.text;
  };

  return {
    async createBucket(as, name) {
      const response = await http.send(as, { method: 'PUT', path: `/${name}` });
      if (response.status === 200 || response.code === 'BucketAlreadyOwnedByYou') return true;
      if (response.status === 409 && response.code === 'BucketAlreadyExists') return false;
      throw new PermanentBackendError('object store', `create bucket answered ${response.status}`);
    },

    async setVersioning(as, name, enabled) {
      const response = await http.send(as, {
        method: 'PUT',
        path: `/${name}`,
        query: { versioning: '' },
        body: VERSIONING_BODY(enabled),
        headers: { 'content-type': 'application/xml' },
      });
      if (response.status !== 200) throw new PermanentBackendError('object store', `set versioning answered ${response.status}`);
    },

    async deleteMarkers(as, name, limit) {
      return (await listVersions(as, name, limit)).split('<DeleteMarker>').length - 1;
    },

    async getPolicy(as, name) {
      const response = await http.send(as, { method: 'GET', path: `/${name}`, query: { policy: '' } });
      if (response.status === 404) return null;
      if (response.status !== 200) throw new PermanentBackendError('object store', `get bucket policy answered ${response.status}`);
      return response.text;
    },

    async putPolicy(as, name, policy) {
      const response = await http.send(as, {
        method: 'PUT',
        path: `/${name}`,
        query: { policy: '' },
        body: policy,
        headers: { 'content-type': 'application/json' },
      });
      if (response.status !== 200 && response.status !== 204)
        throw new PermanentBackendError('object store', `put bucket policy answered ${response.status}`);
    },

    async holdsAnything(as, name) {
      const listing = await listVersions(as, name, 1);
      return listing.includes('<Version>') || listing.includes('<DeleteMarker>');
    },
  };
}
