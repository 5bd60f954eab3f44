import { parse } from 'node:url';

/**
 * Spares every request a stack trace. express-openapi-validator 5.6 calls the legacy `url.parse`
 * on every request's URL (to read its raw query). From Node 24 (DEP0169), each such call made
 * from inside node_modules captures a stack trace to decide whether to warn, for as long as no
 * call has warned yet, which from node_modules never happens: 1.6 µs a call in a bare loop,
 * about 6% of the CPU of a GET /billing under the server's deeper stacks. One call from here,
 * outside node_modules, settles it: Node warns once and never checks again. The warning is for
 * the validator's use, which is not ours to change, so it is not printed (deprecation warnings
 * are off for that one call). On Node 20 and 22 it is one cheap parse of "/".
 */
export function settleLegacyUrlParseCheck(): void {
  const quiet = process.noDeprecation;
  process.noDeprecation = true;
  try {
    parse('/');
  } finally {
    process.noDeprecation = quiet;
  }
}
