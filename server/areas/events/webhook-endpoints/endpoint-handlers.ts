import type { OperationHandlers } from '../../../../generated/operations.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import { performWrite } from '../../../core/write.ts';
import type { Pool } from '../../../db/pool.ts';
import { deliveriesPage, toWebhookDeliveryOut } from '../deliveries/delivery-rows.ts';
import { toEventOut } from '../events/event-rows.ts';
import { deleteEndpoint, endpointsPage, findEndpoint, toWebhookEndpointOut } from './endpoint-rows.ts';
import type { EndpointService } from './endpoint-service.ts';

type EndpointOperations =
  | 'listWebhookEndpoints'
  | 'createWebhookEndpoint'
  | 'getWebhookEndpoint'
  | 'updateWebhookEndpoint'
  | 'deleteWebhookEndpoint'
  | 'rotateWebhookEndpointSecret'
  | 'testWebhookEndpoint'
  | 'listWebhookEndpointDeliveries'
  | 'resendWebhookEndpointDelivery';

/** Handlers of webhook endpoints and their deliveries: read the request, call the service, answer. */
export function endpointHandlers({
  pool,
  endpoints,
}: {
  pool: Pool;
  endpoints: EndpointService;
}): Pick<OperationHandlers<RequestContext>, EndpointOperations> {
  const orgOf = (context: RequestContext) => context.principal.orgId;
  return {
    async listWebhookEndpoints(request, context) {
      return { status: 200, body: await endpointsPage(pool, orgOf(context), request.query) };
    },

    async createWebhookEndpoint(request, context) {
      const url = await endpoints.safeUrl(request.body.url);
      return performWrite(pool, context, async (tx) => {
        const created = await endpoints.create(tx, orgOf(context), {
          url,
          description: request.body.description ?? null,
          eventTypes: request.body.event_types ?? ['*'],
          enabled: request.body.enabled ?? true,
        });
        const endpoint = toWebhookEndpointOut(created.endpoint);
        return {
          response: { status: 201 as const, body: { webhook_endpoint: endpoint, secret: created.secret } },
          // The secret is shown once: a replay returns the endpoint without it.
          replayBody: { webhook_endpoint: endpoint },
          audit: { resourceId: orgOf(context), after: endpoint },
        };
      });
    },

    async getWebhookEndpoint(request, context) {
      return { status: 200, body: toWebhookEndpointOut(await findEndpoint(pool, orgOf(context), request.path.endpoint_id)) };
    },

    async updateWebhookEndpoint(request, context) {
      const { url, description, event_types: eventTypes, enabled } = request.body;
      const checkedUrl = url === undefined ? undefined : await endpoints.safeUrl(url);
      return performWrite(pool, context, async (tx) => {
        const { before, after } = await endpoints.update(tx, orgOf(context), request.path.endpoint_id, {
          url: checkedUrl,
          description,
          eventTypes,
          enabled,
        });
        const endpoint = toWebhookEndpointOut(after);
        return {
          response: { status: 200 as const, body: endpoint },
          audit: { resourceId: orgOf(context), before: toWebhookEndpointOut(before), after: endpoint },
        };
      });
    },

    deleteWebhookEndpoint: (request, context) =>
      performWrite(pool, context, async (tx) => {
        const endpoint = toWebhookEndpointOut(await findEndpoint(tx, orgOf(context), request.path.endpoint_id, true));
        await deleteEndpoint(tx, orgOf(context), endpoint.id);
        return { response: { status: 204 as const, body: undefined }, audit: { resourceId: orgOf(context), before: endpoint } };
      }),

    rotateWebhookEndpointSecret: (request, context) =>
      performWrite(pool, context, async (tx) => {
        const rotated = await endpoints.rotate(tx, orgOf(context), request.path.endpoint_id);
        const endpoint = toWebhookEndpointOut(rotated.endpoint);
        return {
          response: { status: 200 as const, body: { webhook_endpoint: endpoint, secret: rotated.secret } },
          replayBody: { webhook_endpoint: endpoint },
          audit: { resourceId: orgOf(context), after: endpoint },
        };
      }),

    testWebhookEndpoint: (request, context) =>
      performWrite(pool, context, async (tx) => {
        const { event, delivery } = await endpoints.ping(tx, orgOf(context), request.path.endpoint_id);
        return {
          response: { status: 202 as const, body: { event: toEventOut(event), delivery: toWebhookDeliveryOut(delivery) } },
          audit: { resourceId: orgOf(context), after: { event_id: event.id, delivery_id: delivery.id } },
        };
      }),

    async listWebhookEndpointDeliveries(request, context) {
      const endpoint = await findEndpoint(pool, orgOf(context), request.path.endpoint_id);
      const { status = null, event_id: eventId = null } = request.query;
      return { status: 200, body: await deliveriesPage(pool, endpoint.id, { status, eventId }, request.query) };
    },

    resendWebhookEndpointDelivery: (request, context) =>
      performWrite(pool, context, async (tx) => {
        const delivery = await endpoints.resend(tx, orgOf(context), request.path.endpoint_id, request.path.delivery_id);
        return {
          response: { status: 202 as const, body: toWebhookDeliveryOut(delivery) },
          audit: { resourceId: orgOf(context), after: { delivery_id: delivery.id, event_id: delivery.event_id } },
        };
      }),
  };
}
