// paginate: every item of a list, page after page, following `next_cursor` until it is null.

export interface Page<Item> {
  items: Item[];
  next_cursor: string | null;
}

/** Yields the items of each page `fetchPage(cursor)` returns, from `cursor` (undefined: the first page) on. */
export async function* paginate<Item>(
  fetchPage: (cursor: string | undefined) => Promise<Page<Item>>,
  cursor?: string,
): AsyncGenerator<Item, void, undefined> {
  for (;;) {
    const page = await fetchPage(cursor);
    yield* page.items;
    if (page.next_cursor == null) return;
    cursor = page.next_cursor;
  }
}
