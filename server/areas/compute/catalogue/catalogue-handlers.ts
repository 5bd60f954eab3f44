import type { OperationHandlers } from '../../../../generated/operations.ts';
import type { RequestContext } from '../../../core/request-context.ts';
import type { Catalogue } from './catalogue.ts';
import { regionNotFound } from './catalogue-errors.ts';
import { listName } from '../../../core/pagination.ts';
import { catalogueListPage } from './catalogue.ts';

/** Handlers of the catalogue: regions and their images, from the loaded catalogue (no database). */
export function catalogueHandlers({
  catalogue,
}: {
  catalogue: Catalogue;
}): Pick<OperationHandlers<RequestContext>, 'listRegions' | 'listImages'> {
  return {
    async listRegions(request) {
      const body = catalogueListPage(listName('regions'), catalogue.regions, request.query, (region) => ({
        id: region.id,
        name: region.name,
        disk_redundancy: region.disk_redundancy,
        storage_pools: region.storage_pools.map(({ id, name }) => ({ id, name })),
        network_profiles: region.network_profiles.map(({ id, name }) => ({ id, name })),
      }));
      return { status: 200, body };
    },

    async listImages(request) {
      const region = catalogue.region(request.query.region);
      if (!region) throw regionNotFound(request.query.region);
      const body = catalogueListPage(listName('images', { region: region.id }), region.images, request.query, (image) => ({ ...image }));
      return { status: 200, body };
    },
  };
}
