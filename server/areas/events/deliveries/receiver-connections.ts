import type { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { LruMap } from '../../../core/lru-map.ts';
import { http } from '../../../node-http.ts';

/** Receivers' origins whose connections are kept at most; past it the least recently used go. */
const MAX_ORIGINS = 256;

/**
 * Connections to webhook receivers kept open between attempts (HTTP keep-alive), as the large
 * senders keep them: a receiver behind TLS would otherwise pay a handshake for every event, and
 * so would the platform. Kept per origin and per checked address: a connection is only ever
 * reused for the address its URL resolved to and was checked against (url-safety.ts), so a name
 * that resolves elsewhere later gets a connection of its own, checked anew. An idle connection
 * is closed after `idleMs`, shorter than the usual servers' keep-alive (Node's 5 s), so that
 * the receiver rarely closes one under a request; `idleMs` 0 keeps none (a connection per attempt).
 */
export class ReceiverConnections {
  /** By origin and address; one that goes closes its connections. */
  private readonly agents = new LruMap<string, HttpAgent>(MAX_ORIGINS, (_key, agent) => agent.destroy());
  private readonly idleMs: number;

  constructor(idleMs: number) {
    this.idleMs = idleMs;
  }

  /** The agent for `url` connected to `address`; false: a connection of its own, closed after the attempt. */
  agentFor(url: URL, address: string): HttpAgent | false {
    if (this.idleMs === 0) return false;
    const key = `${url.protocol}//${url.host}@${address}`;
    let agent = this.agents.get(key);
    if (!agent) {
      const options = { keepAlive: true, maxFreeSockets: 4, timeout: this.idleMs, scheduling: 'lifo' as const };
      agent = url.protocol === 'https:' ? new HttpsAgent(options) : new http.Agent(options);
      this.agents.set(key, agent);
    }
    return agent;
  }

  /** Closes every kept connection (the stop). */
  close(): void {
    this.agents.clear();
  }
}
