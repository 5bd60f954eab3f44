import { effectiveGrants, isPublicGrant } from './acl-grants.ts';
import { S3Error } from './errors.ts';
import { checkedBody } from './config-body.ts';
import { isPublicPolicy, parsePolicy, storedPolicy } from './policy.ts';
import { sendXml, clearingBucketSetting, settingAudit, type S3Handler } from './request.ts';
import { blocks, document, text } from './xml.ts';

/**
 * PutBucketPolicy, GetBucketPolicy, DeleteBucketPolicy and GetBucketPolicyStatus, and the
 * bucket's PublicAccessBlock. The policy is kept as given (GetBucketPolicy answers it byte for
 * byte) once checked (policy.ts); access.ts applies it to every request.
 */
const putBucketPolicy: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const body = (await checkedBody(request, 20 * 1024)).trim();
  const policy = parsePolicy(body, bucket.name);
  // BlockPublicPolicy: a policy that would share the bucket with everyone is refused, as S3 refuses it.
  if (bucket.public_access_block?.blockPublicPolicy && isPublicPolicy(policy)) throw new S3Error('AccessDenied', 403, 'Access Denied');
  await request.store.settings.setPolicy(bucket.id, body, settingAudit(request, bucket, 'policy', bucket.policy, body));
  request.res.statusCode = 204;
  request.res.end();
};

const noPolicy = (bucket: string) => new S3Error('NoSuchBucketPolicy', 404, 'The bucket policy does not exist', { BucketName: bucket });

const getBucketPolicy: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  if (bucket.policy === null) throw noPolicy(bucket.name);
  const { res } = request;
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Content-Length', Buffer.byteLength(bucket.policy));
  res.end(bucket.policy);
};

const deleteBucketPolicy = clearingBucketSetting(
  'policy',
  (bucket) => bucket.policy,
  (request, bucketId, audit) => request.store.settings.setPolicy(bucketId, null, audit),
);

/**
 * GetBucketPolicyStatus: whether the bucket is shared with everyone or every organization (S3's
 * IsPublic), by its policy or, as RGW counts it, by an AllUsers or AuthenticatedUsers grant of its ACL.
 */
const getBucketPolicyStatus: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const isPublic =
    (bucket.policy !== null && isPublicPolicy(storedPolicy(bucket.policy, bucket.name))) ||
    effectiveGrants(bucket.acl, bucket).some(isPublicGrant);
  sendXml(request.res, 200, document('PolicyStatus', { IsPublic: isPublic }));
};

const FLAGS = [
  ['BlockPublicAcls', 'blockPublicAcls'],
  ['IgnorePublicAcls', 'ignorePublicAcls'],
  ['BlockPublicPolicy', 'blockPublicPolicy'],
  ['RestrictPublicBuckets', 'restrictPublicBuckets'],
] as const;

const putPublicAccessBlock: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const xml = await checkedBody(request);
  const configuration = blocks(xml, 'PublicAccessBlockConfiguration')[0];
  if (configuration === undefined)
    throw new S3Error('MalformedXML', 400, 'The XML you provided was not well-formed or did not validate against our published schema');
  const flag = (name: string): boolean => {
    const value = text(configuration, name);
    if (value !== undefined && value !== 'true' && value !== 'false')
      throw new S3Error('MalformedXML', 400, 'The XML you provided was not well-formed or did not validate against our published schema');
    return value === 'true';
  };
  const block = {
    blockPublicAcls: flag('BlockPublicAcls'),
    ignorePublicAcls: flag('IgnorePublicAcls'),
    blockPublicPolicy: flag('BlockPublicPolicy'),
    restrictPublicBuckets: flag('RestrictPublicBuckets'),
  };
  await request.store.settings.setPublicAccessBlock(
    bucket.id,
    block,
    settingAudit(request, bucket, 'public_access_block', bucket.public_access_block, block),
  );
  request.res.statusCode = 200;
  request.res.setHeader('Content-Length', '0');
  request.res.end();
};

const getPublicAccessBlock: S3Handler = async (request) => {
  const bucket = await request.access.bucket(request.caller, request.bucketName);
  const block = bucket.public_access_block;
  if (block === null)
    throw new S3Error('NoSuchPublicAccessBlockConfiguration', 404, 'The public access block configuration was not found', {
      BucketName: bucket.name,
    });
  sendXml(
    request.res,
    200,
    document('PublicAccessBlockConfiguration', Object.fromEntries(FLAGS.map(([name, field]) => [name, block[field]]))),
  );
};

const deletePublicAccessBlock = clearingBucketSetting(
  'public_access_block',
  (bucket) => bucket.public_access_block,
  (request, bucketId, audit) => request.store.settings.setPublicAccessBlock(bucketId, null, audit),
);

export const bucketPolicyRoutes = {
  GET: { policy: getBucketPolicy, policyStatus: getBucketPolicyStatus, publicAccessBlock: getPublicAccessBlock },
  PUT: { policy: putBucketPolicy, publicAccessBlock: putPublicAccessBlock },
  DELETE: { policy: deleteBucketPolicy, publicAccessBlock: deletePublicAccessBlock },
};
