/** The object store driver: filled in by the storage area. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ObjectStoreDriver {}
