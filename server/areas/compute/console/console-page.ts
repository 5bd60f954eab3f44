import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Router, type Response } from 'express';

const here = path.dirname(fileURLToPath(import.meta.url));
const xtermDir = path.dirname(path.dirname(createRequire(import.meta.url).resolve('@xterm/xterm')));

/** The page's files: its own, and xterm.js from node_modules (nothing from a CDN). Read once. */
const FILES: Record<string, { file: string; type: string }> = {
  '/console': { file: path.join(here, 'console-page', 'index.html'), type: 'text/html; charset=utf-8' },
  '/console/console.js': { file: path.join(here, 'console-page', 'console.js'), type: 'text/javascript; charset=utf-8' },
  '/console/console.css': { file: path.join(here, 'console-page', 'console.css'), type: 'text/css; charset=utf-8' },
  '/console/assets/xterm.js': { file: path.join(xtermDir, 'lib', 'xterm.js'), type: 'text/javascript; charset=utf-8' },
  '/console/assets/xterm.css': { file: path.join(xtermDir, 'css', 'xterm.css'), type: 'text/css; charset=utf-8' },
};

/**
 * A small page that opens an instance's console in the browser from a collected console URL
 * (`/console#<url>`, or pasted). Outside /v1 and the contract: it serves files only, and the
 * console itself is the WebSocket the URL names. Its content security policy lets it load its own
 * scripts and styles (xterm.js sets inline styles) and connect to WebSockets, nothing else.
 */
export function consolePage(): Router {
  const router = Router();
  const contents = new Map(Object.entries(FILES).map(([route, { file, type }]) => [route, { body: readFileSync(file), type }]));
  const send = (res: Response, route: string) => {
    const entry = contents.get(route)!;
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self' ws: wss:; font-src 'self' data:; frame-ancestors 'none'",
    );
    res.setHeader('Cache-Control', 'no-cache');
    res.type(entry.type).send(entry.body);
  };
  for (const route of contents.keys()) {
    router.get(route, (_req, res) => send(res, route));
    if (route === '/console') router.get('/console/', (_req, res) => send(res, route));
  }
  return router;
}
