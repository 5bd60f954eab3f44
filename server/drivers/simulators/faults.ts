import type { Pool } from '../../db/pool.ts';
import { PermanentBackendError, TransientBackendError, type Backend } from '../errors.ts';

/**
 * Fault injection for the simulated backends, configured by SIM_FAULTS: rules separated by `;`,
 * each `<backend>.<method>[@<subject glob>]=<kind>[*<count>|%<percent>]`:
 *
 *   hypervisor.createServer@flaky-*=transient*2   the first 2 calls for each subject matching
 *                                                 flaky-* fail transiently, then calls succeed
 *   objectstore.createBucket@doomed-*=permanent   every call for doomed-* is refused
 *   hypervisor.*=transient%5                       5% of all hypervisor calls fail transiently
 *
 * The subject is what the call is about (an instance or bucket name). Counted faults are counted
 * in the database, so a restart does not reset them.
 */
export interface FaultRule {
  backend: string;
  method: string;
  subject: RegExp | undefined;
  kind: 'transient' | 'permanent';
  count: number | undefined;
  percent: number | undefined;
  text: string;
}

const RULE = /^(\w+)\.(\w+|\*)(?:@([^=]+))?=(transient|permanent)(?:\*(\d+)|%(\d+(?:\.\d+)?))?$/;

export function parseFaultRules(spec: string): FaultRule[] {
  return spec
    .split(';')
    .map((text) => text.trim())
    .filter(Boolean)
    .map((text) => {
      const match = RULE.exec(text);
      if (!match) throw new Error(`SIM_FAULTS: cannot read the rule ${JSON.stringify(text)}`);
      const [, backend, method, glob, kind, count, percent] = match;
      return {
        backend: backend!,
        method: method!,
        subject: glob ? new RegExp(`^${glob.split('*').map(escapeRegExp).join('.*')}$`) : undefined,
        kind: kind as FaultRule['kind'],
        count: count === undefined ? undefined : Number(count),
        percent: percent === undefined ? undefined : Number(percent),
        text,
      };
    });
}

export class FaultInjector {
  private readonly pool: Pool;
  private readonly rules: FaultRule[];
  private readonly random: () => number;

  constructor(pool: Pool, rules: FaultRule[], random: () => number = Math.random) {
    this.pool = pool;
    this.rules = rules;
    this.random = random;
  }

  /** Throws the injected failure for this call, if a rule says so. */
  async check(backend: string, driverBackend: Backend, method: string, subject: string): Promise<void> {
    const rule = await this.firing(backend, method, subject);
    if (!rule) return;
    const reason = `injected by SIM_FAULTS rule ${rule.text}`;
    throw rule.kind === 'transient' ? new TransientBackendError(driverBackend, reason) : new PermanentBackendError(driverBackend, reason);
  }

  /**
   * The rule that fires for this call, if one does: for a simulator whose injected outcome is an
   * answer rather than a failure (the billing provider's declined card).
   */
  async firing(backend: string, method: string, subject: string): Promise<FaultRule | undefined> {
    for (const rule of this.rules) {
      if (rule.backend !== backend || (rule.method !== '*' && rule.method !== method)) continue;
      if (rule.subject && !rule.subject.test(subject)) continue;
      if (await this.fires(rule, subject)) return rule;
    }
    return undefined;
  }

  private async fires(rule: FaultRule, subject: string): Promise<boolean> {
    if (rule.percent !== undefined) return this.random() * 100 < rule.percent;
    if (rule.count === undefined) return true;
    const { rows } = await this.pool.query<{ calls: number }>(
      `INSERT INTO sim_fault_counters (rule, subject, calls) VALUES ($1, $2, 1)
       ON CONFLICT (rule, subject) DO UPDATE SET calls = sim_fault_counters.calls + 1
       RETURNING calls`,
      [rule.text, subject],
    );
    return rows[0]!.calls <= rule.count;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
