import type { OperationHandlers } from '../../../../generated/operations.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import type { OrganizationClock } from '../../../core/test-clocks.ts';
import { performWrite } from '../../../core/write.ts';
import type { Pool } from '../../../db/pool.ts';
import type { PriceList } from '../prices/price-list.ts';
import { billingOf, setSpendBudget, type BillingCache } from './billing-account.ts';

/** The billing account: month-to-date usage and cost, the price list, and the spend budget. */
export function accountHandlers({
  pool,
  orgClock,
  prices,
  cache,
}: {
  pool: Pool;
  orgClock: OrganizationClock;
  prices: PriceList;
  cache: BillingCache;
}): Pick<OperationHandlers<RequestContext>, 'getBilling' | 'setBillingBudget'> {
  return {
    async getBilling(_request, context) {
      const orgId = context.principal.orgId;
      return { status: 200, body: await billingOf(pool, prices, orgId, await orgClock.now(pool, orgId), cache) };
    },

    async setBillingBudget(request, context) {
      const orgId = context.principal.orgId;
      const budget = request.body.spend_budget_cents;
      return performWrite(pool, context, async (tx) => {
        const { before } = await setSpendBudget(tx, orgId, budget);
        return {
          response: { status: 200 as const, body: await billingOf(tx, prices, orgId, await orgClock.now(tx, orgId)) },
          audit: { resourceId: orgId, before: { spend_budget_cents: before }, after: { spend_budget_cents: budget } },
          // Answered once no process serves the budget it had before.
          afterCommit: async () => cache.changed(),
        };
      });
    },
  };
}
