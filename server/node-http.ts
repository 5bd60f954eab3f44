/**
 * Node's `http` module as CommonJS gives it, for the server's value imports of it.
 *
 * An ES module import of `node:http` reads every export of the module to build its namespace,
 * `http.WebSocket` among them, whose getter loads undici (Node's fetch and WebSocket): about 70 ms
 * of a start's CPU on this machine, for code the server never runs (nodejs/node#59686).
 * `process.getBuiltinModule` returns the module itself, with nothing read. Type imports of
 * `node:http` are erased and cost nothing; ESLint refuses value imports of it elsewhere.
 */
export const http = process.getBuiltinModule('node:http');
