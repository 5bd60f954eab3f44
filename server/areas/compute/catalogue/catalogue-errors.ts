import { notFound } from '../../../core/errors.ts';

// The catalogue's named errors: the only place their status, code and title are chosen.

export const regionNotFound = (regionId: string) => notFound(`No region ${regionId}; list the regions with listRegions.`);
