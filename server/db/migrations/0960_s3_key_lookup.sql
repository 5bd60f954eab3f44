-- The S3 endpoint asks the platform whether an access key id is active (areas/storage/s3-port.ts)
-- on every request whose key is not cached: by the store's access key id.
CREATE INDEX s3_access_keys_objectstore_id ON s3_access_keys (objectstore_access_key_id);
