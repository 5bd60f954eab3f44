// JSON bodies as exact bytes. A body is a JSON value in which integers may be bigints (written
// with every digit), and in which two kinds of leaf stand for what JSON.stringify cannot write:
// a raw literal (`1e-400`, `-0`, a nesting 5,000 deep) and a string holding invalid UTF-8.

/** Written into the body exactly as given, in place of a JSON value. */
export class RawJson {
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }
}

/** A string whose content is these bytes, unescaped (for invalid UTF-8 and the like). */
export class RawStringBytes {
  readonly bytes: Buffer;

  constructor(bytes: Buffer) {
    this.bytes = bytes;
  }
}

export type JsonBody = null | boolean | number | bigint | string | RawJson | RawStringBytes | JsonBody[] | { [key: string]: JsonBody };

export function isPlainObject(value: unknown): value is { [key: string]: JsonBody } {
  return (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    !(value instanceof RawJson) &&
    !(value instanceof RawStringBytes)
  );
}

/** Whether the body holds a leaf that only its bytes describe (then a schema cannot judge it). */
export function hasRawParts(value: JsonBody): boolean {
  if (value instanceof RawJson || value instanceof RawStringBytes) return true;
  if (Array.isArray(value)) return value.some(hasRawParts);
  if (isPlainObject(value)) return Object.values(value).some(hasRawParts);
  return false;
}

export function encodeJson(value: JsonBody): Buffer {
  const parts: Buffer[] = [];
  const write = (text: string) => parts.push(Buffer.from(text, 'utf8'));
  const visit = (node: JsonBody) => {
    if (node instanceof RawJson) write(node.text);
    else if (node instanceof RawStringBytes) parts.push(Buffer.from('"'), node.bytes, Buffer.from('"'));
    else if (typeof node === 'bigint') write(node.toString());
    else if (Array.isArray(node)) {
      write('[');
      node.forEach((item, index) => {
        if (index > 0) write(',');
        visit(item);
      });
      write(']');
    } else if (isPlainObject(node)) {
      write('{');
      Object.entries(node).forEach(([key, item], index) => {
        write(`${index > 0 ? ',' : ''}${JSON.stringify(key)}:`);
        visit(item);
      });
      write('}');
    } else write(JSON.stringify(node));
  };
  visit(value);
  return Buffer.concat(parts);
}

/** The body as the server's validator sees it once parsed (big integers rounded to numbers). */
export function toPlainJson(value: JsonBody): unknown {
  return JSON.parse(encodeJson(value).toString('utf8'));
}

/** A path into a body, as a JSON Pointer: for the failure reports. */
export function pointer(path: Array<string | number>): string {
  return path.map((segment) => `/${String(segment).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}
