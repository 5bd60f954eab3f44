-- An object's key compares in byte order ("C") in its column, as it is listed, rather than in
-- the database's collation. The lookup of a key (`bucket_id = $1 AND key = $2`) could not use
-- the listing index, whose key is "C", for its key: only for its bucket. A plan made while the
-- table was small (every fresh store, until autovacuum analyzes it) rated that index as cheap as
-- the primary key and took it, and then read every version of the bucket for each write: a
-- small PUT's lookup walked 3,000 index entries (1 to 3 ms) after 3,000 writes, growing with
-- each. With the column itself in "C", every index on it serves the key, whatever the
-- statistics say. Equality is unchanged (both collations are deterministic), and every ordering
-- of keys already named "C".
ALTER TABLE store_versions ALTER COLUMN key TYPE text COLLATE "C";
ALTER TABLE store_uploads ALTER COLUMN key TYPE text COLLATE "C";
