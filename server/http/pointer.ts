/** A JSON Pointer (RFC 6901) to a place in a request body. */
export function pointerOf(path: ReadonlyArray<string | number>): string {
  return path.map((segment) => `/${String(segment).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}
