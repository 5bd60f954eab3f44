import type { ServedBucket } from '../rows.ts';
import type { BucketUse } from './access.ts';
import type { S3Request } from './request.ts';
import { BUCKET_SUB_RESOURCES, OBJECT_SUB_RESOURCES, subResourceOf } from './sub-resources.ts';
import { tagsOfHeader } from './tagging.ts';

/**
 * The policy action of a request (S3's names, `s3:GetObject`…), from its method and
 * sub-resource, as the endpoint routes it. Undefined for what no policy names (ListBuckets).
 */
export function actionOf(request: S3Request): string | undefined {
  const method = request.req.method ?? 'GET';
  const versioned = request.query.has('versionId');
  if (request.bucketName === '') return undefined;
  if (request.key === '') {
    const sub = subResourceOf(request, BUCKET_SUB_RESOURCES) ?? '';
    const verb = method === 'GET' || method === 'HEAD' ? 'Get' : method === 'DELETE' ? 'Delete' : 'Put';
    switch (sub) {
      case '':
        if (method === 'GET' || method === 'HEAD') return 's3:ListBucket';
        return method === 'DELETE' ? 's3:DeleteBucket' : method === 'PUT' ? 's3:CreateBucket' : undefined;
      case 'versions':
        return 's3:ListBucketVersions';
      case 'uploads':
        return 's3:ListBucketMultipartUploads';
      case 'location':
        return 's3:GetBucketLocation';
      case 'delete':
        return 's3:DeleteObject';
      case 'cors':
        return `s3:${verb === 'Delete' ? 'Put' : verb}BucketCORS`;
      case 'lifecycle':
        return `s3:${verb === 'Delete' ? 'Put' : verb}LifecycleConfiguration`;
      case 'encryption':
        return `s3:${verb === 'Delete' ? 'Put' : verb}EncryptionConfiguration`;
      case 'object-lock':
        return `s3:${verb}BucketObjectLockConfiguration`;
      case 'publicAccessBlock':
        return `s3:${verb}BucketPublicAccessBlock`;
      case 'ownershipControls':
        return `s3:${verb}BucketOwnershipControls`;
      case 'policyStatus':
        return 's3:GetBucketPolicyStatus';
      default: {
        // versioning, acl, tagging, policy, website, logging…: s3:GetBucketVersioning, s3:PutBucketTagging…
        const name = sub.charAt(0).toUpperCase() + sub.slice(1);
        return `s3:${verb}Bucket${name === 'Acl' ? 'Acl' : name}`;
      }
    }
  }
  const sub = subResourceOf(request, OBJECT_SUB_RESOURCES);
  if (request.query.has('uploadId')) {
    if (method === 'GET') return 's3:ListMultipartUploadParts';
    if (method === 'DELETE') return 's3:AbortMultipartUpload';
    return 's3:PutObject';
  }
  const suffix = versioned ? 'Version' : '';
  switch (sub) {
    case 'acl':
      return method === 'PUT' ? `s3:PutObject${suffix}Acl` : `s3:GetObject${suffix}Acl`;
    case 'tagging':
      return method === 'PUT'
        ? `s3:PutObject${suffix}Tagging`
        : method === 'DELETE'
          ? `s3:DeleteObject${suffix}Tagging`
          : `s3:GetObject${suffix}Tagging`;
    case 'retention':
      return method === 'PUT' ? 's3:PutObjectRetention' : 's3:GetObjectRetention';
    case 'legal-hold':
      return method === 'PUT' ? 's3:PutObjectLegalHold' : 's3:GetObjectLegalHold';
    case 'attributes':
      return `s3:GetObject${suffix}Attributes`;
    case 'uploads':
      return 's3:PutObject';
    default:
      if (method === 'PUT' || method === 'POST') return 's3:PutObject';
      if (method === 'DELETE') return `s3:DeleteObject${suffix}`;
      return `s3:GetObject${suffix}`;
  }
}

const header = (request: S3Request, name: string): string | undefined => {
  const value = request.req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};

/**
 * The condition keys of a request, as a policy reads them (lower-case): its `x-amz-*` headers
 * (`s3:x-amz-server-side-encryption`, `s3:x-amz-acl`, `s3:x-amz-copy-source`…), the tags it
 * gives (`s3:RequestObjectTag/<key>`) and those the object has (`s3:ExistingObjectTag/<key>`),
 * its listing parameters (`s3:prefix`…), `aws:SourceIp`, `aws:SecureTransport`, `aws:Referer`
 * and `aws:UserAgent`. Another key is absent.
 */
export function useOf(request: S3Request, action: string, key: string | undefined, versionId?: string): BucketUse {
  return {
    action,
    key,
    versionId,
    principal: { orgId: request.caller.orgId, accessKeyId: request.signed.accessKeyId, anonymous: request.caller.anonymous },
    value: async (name: string, bucket: ServedBucket) => {
      if (name.startsWith('s3:x-amz-')) return header(request, name.slice(3));
      if (name.startsWith('s3:requestobjecttag/')) {
        const given = header(request, 'x-amz-tagging');
        const tags = given === undefined ? [] : tagsOfHeader(given);
        return tags.find(([tag]) => tag.toLowerCase() === name.slice('s3:requestobjecttag/'.length))?.[1];
      }
      if (name.startsWith('s3:existingobjecttag/')) {
        if (key === undefined) return undefined;
        const version = await request.store.objects.version(bucket.id, key, versionId);
        return version?.tags.find(([tag]) => tag.toLowerCase() === name.slice('s3:existingobjecttag/'.length))?.[1];
      }
      switch (name) {
        case 's3:prefix':
        case 's3:delimiter':
        case 's3:max-keys':
          return request.query.get(name.slice(3)) ?? undefined;
        case 's3:versionid':
          return versionId;
        case 'aws:sourceip':
          return request.req.socket.remoteAddress;
        case 'aws:securetransport':
          return String(request.secure);
        case 'aws:referer':
          return header(request, 'referer');
        case 'aws:useragent':
          return header(request, 'user-agent');
        case 'aws:principalaccount':
          return request.caller.anonymous ? undefined : request.caller.orgId;
        default:
          return undefined;
      }
    },
  };
}
