import type { Tag } from '../rows.ts';
import { S3Error } from './errors.ts';
import { blocks, element, malformedXml, text } from './xml.ts';

/** S3's limits of tags: 10 on an object, 50 on a bucket; keys up to 128 characters, values up to 256. */
export const MAX_OBJECT_TAGS = 10;
export const MAX_BUCKET_TAGS = 50;
const MAX_KEY_LENGTH = 128;
const MAX_VALUE_LENGTH = 256;

const invalidTag = (message: string) => new S3Error('InvalidTag', 400, message);

/**
 * Checks a TagSet against S3's rules (a count, key and value lengths, keys unique and not
 * `aws:`-prefixed) and gives it in key order, the order S3 tools read tags back in (RGW keeps
 * them so): a TagSet is a set, and its order then never depends on how it was sent.
 */
export function checkedTags(tags: Tag[], max: number): Tag[] {
  if (tags.length > max) throw invalidTag(`${max === MAX_OBJECT_TAGS ? 'Object' : 'Bucket'} tags cannot be greater than ${max}`);
  const keys = new Set<string>();
  for (const [key, value] of tags) {
    if ([...key].length === 0 || [...key].length > MAX_KEY_LENGTH) throw invalidTag('The TagKey you have provided is invalid');
    if ([...value].length > MAX_VALUE_LENGTH) throw invalidTag('The TagValue you have provided is invalid');
    if (key.toLowerCase().startsWith('aws:')) throw invalidTag('Your TagKey cannot be prefixed with aws:');
    if (keys.has(key)) throw invalidTag('Cannot provide multiple Tags with the same key');
    keys.add(key);
  }
  return [...tags].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The TagSet of a Tagging document (PutObjectTagging, PutBucketTagging). */
export function tagsOfDocument(xml: string, max: number): Tag[] {
  const tagging = blocks(xml, 'Tagging')[0];
  if (tagging === undefined) throw malformedXml();
  const tags: Tag[] = blocks(tagging, 'Tag').map((tag) => {
    const key = text(tag, 'Key');
    const value = text(tag, 'Value');
    if (key === undefined || value === undefined) throw malformedXml();
    return [key, value];
  });
  return checkedTags(tags, max);
}

/** The tags of an `x-amz-tagging` header: a URL query string (`a=1&b=2`). */
export function tagsOfHeader(header: string): Tag[] {
  const tags: Tag[] = [];
  for (const pair of header.split('&')) {
    if (pair === '') continue;
    const at = pair.indexOf('=');
    try {
      const decode = (part: string) => decodeURIComponent(part.replace(/\+/g, ' '));
      tags.push(at < 0 ? [decode(pair), ''] : [decode(pair.slice(0, at)), decode(pair.slice(at + 1))]);
    } catch {
      throw new S3Error('InvalidArgument', 400, 'The header x-amz-tagging shall be encoded as UTF-8 then URLEncoded URL query parameters');
    }
  }
  return checkedTags(tags, MAX_OBJECT_TAGS);
}

/** The `<TagSet>` element of tags, in their order. */
export function tagSetElement(tags: Tag[]): string {
  return element('TagSet', { Tag: tags.map(([Key, Value]) => ({ Key, Value })) });
}
