// The XML of S3's answers and of the few request bodies S3 clients send (Delete,
// CompleteMultipartUpload, Tagging, VersioningConfiguration…): small, fixed shapes, read and
// written without a general XML library.
import { S3Error } from './errors.ts';

export const S3_NAMESPACE = 'http://s3.amazonaws.com/doc/2006-03-01/';

/** Escapes text for an element; line ends and tabs as character references, which parsers keep (a bare one may be trimmed away). */
export function escapeXml(text: string): string {
  return text.replace(
    /[<>&'"\r\n\t]/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;', '\r': '&#13;', '\n': '&#10;', '\t': '&#9;' })[c]!,
  );
}

export const malformedXml = () =>
  new S3Error('MalformedXML', 400, 'The XML you provided was not well-formed or did not validate against our published schema');

/**
 * Whether a code point may appear in an XML 1.0 document (its `Char` production): not NUL or the
 * other C0 controls but tab and line ends, not a lone surrogate, not U+FFFE/U+FFFF. Nothing else
 * can reach the store either (PostgreSQL's text holds no NUL).
 */
const isXmlChar = (code: number): boolean =>
  code === 0x9 ||
  code === 0xa ||
  code === 0xd ||
  (code >= 0x20 && code <= 0xd7ff) ||
  (code >= 0xe000 && code <= 0xfffd) ||
  (code >= 0x10000 && code <= 0x10ffff);

/** The text of an element, its references resolved; MalformedXML for a character XML 1.0 does not allow. */
export function unescapeXml(text: string): string {
  const resolved = text.replace(/&(lt|gt|amp|apos|quot|#(\d+)|#x([0-9a-fA-F]+));/g, (_match, name: string, dec?: string, hex?: string) => {
    if (dec !== undefined || hex !== undefined) {
      const code = dec !== undefined ? Number(dec) : parseInt(hex!, 16);
      if (!isXmlChar(code)) throw malformedXml();
      return String.fromCodePoint(code);
    }
    return { lt: '<', gt: '>', amp: '&', apos: "'", quot: '"' }[name]!;
  });
  for (const char of resolved) if (!isXmlChar(char.codePointAt(0)!)) throw malformedXml();
  return resolved;
}

/** A value of an element: text, a nested element list, or omitted (undefined/null). */
export type XmlValue = string | number | boolean | null | undefined | XmlNode[] | string[] | XmlNode;
export interface XmlNode {
  [name: string]: XmlValue;
}

/** Writes elements in the given order; an array value repeats its element. */
export function element(name: string, value: XmlValue): string {
  if (value === undefined || value === null) return '';
  if (Array.isArray(value)) return (value as XmlValue[]).map((item) => element(name, item)).join('');
  if (typeof value === 'object')
    return `<${name}>${Object.entries(value)
      .map(([child, v]) => element(child, v))
      .join('')}</${name}>`;
  return `<${name}>${escapeXml(String(value))}</${name}>`;
}

export function document(root: string, children: XmlNode): string {
  const body = Object.entries(children)
    .map(([name, value]) => element(name, value))
    .join('');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<${root} xmlns="${S3_NAMESPACE}">${body}</${root}>`;
}

/** The blocks `<name>…</name>` of a request body, in order (namespace prefixes and attributes ignored). */
export function blocks(xml: string, name: string): string[] {
  const pattern = new RegExp(`<(?:\\w+:)?${name}(?:\\s[^>]*)?>([\\s\\S]*?)</(?:\\w+:)?${name}>`, 'g');
  return [...xml.matchAll(pattern)].map((match) => match[1]!);
}

/** The text of the first `<name>` in a block, unescaped; undefined when absent. */
export function text(xml: string, name: string): string | undefined {
  const found = blocks(xml, name)[0];
  return found === undefined ? undefined : unescapeXml(found);
}
