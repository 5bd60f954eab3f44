import { createHash } from 'node:crypto';
import type { Queryable } from '../db/pool.ts';
import { prepared, runPrepared } from '../db/statements.ts';
import { invalidCursor } from './errors.ts';

/**
 * Keyset pagination. A cursor names its list and the position after which the next page starts
 * (the sort key of the last item, and its id to break ties), so pages stay stable while items
 * are created. It is opaque to clients: base64url of a small JSON array.
 */
export interface Position {
  key: string;
  id: string;
}

export function encodeCursor(list: string, position: Position): string {
  return Buffer.from(JSON.stringify([list, position.key, position.id])).toString('base64url');
}

/** The form `sortKeySql` writes: UTC, microseconds. */
const SORT_KEY = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.\d{6}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TEXT_ID = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * The position a cursor names, or 400 invalid_cursor when it was not issued for this list. Lists
 * sort by a timestamp, then by id (a uuid unless `idKind` says otherwise); both are checked so
 * that a forged cursor cannot reach the database as anything but a valid position.
 */
export function decodeCursor(list: string, cursor: string | undefined, idKind: 'uuid' | 'text' = 'uuid'): Position | undefined {
  if (cursor === undefined) return undefined;
  try {
    const decoded: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(decoded) &&
      decoded.length === 3 &&
      decoded[0] === list &&
      typeof decoded[1] === 'string' &&
      isSortKey(decoded[1]) &&
      typeof decoded[2] === 'string' &&
      (idKind === 'uuid' ? UUID : TEXT_ID).test(decoded[2])
    ) {
      return { key: decoded[1], id: decoded[2] };
    }
  } catch {
    // Not ours: falls through to the refusal.
  }
  throw invalidCursor();
}

/** A timestamp as `sortKeySql` writes it, naming an instant that exists (no 30 February, no year 0). */
function isSortKey(key: string): boolean {
  const fields = SORT_KEY.exec(key);
  if (!fields) return false;
  const [year, month, day, hour, minute, second] = fields.slice(1).map(Number) as [number, number, number, number, number, number];
  const instant = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  return (
    year >= 1 &&
    instant.getUTCFullYear() === year &&
    instant.getUTCMonth() === month - 1 &&
    instant.getUTCDate() === day &&
    instant.getUTCHours() === hour &&
    instant.getUTCMinutes() === minute &&
    instant.getUTCSeconds() === second
  );
}

/**
 * A page from rows fetched with `LIMIT limit + 1`: the extra row only tells that another page
 * follows. `positionOf` gives a row's sort key and id.
 */
export function page<Row, Item>(
  list: string,
  rows: Row[],
  limit: number,
  positionOf: (row: Row) => Position,
  toItem: (row: Row) => Item,
): { items: Item[]; next_cursor: string | null } {
  const pageRows = rows.slice(0, limit);
  const last = pageRows[pageRows.length - 1];
  return {
    items: pageRows.map(toItem),
    next_cursor: rows.length > limit && last !== undefined ? encodeCursor(list, positionOf(last)) : null,
  };
}

export const DEFAULT_PAGE_SIZE = 50;

/**
 * SQL for a timestamp column as a cursor key: ISO 8601 in UTC with microseconds, so the key
 * compares exactly with the column when it comes back (`$1::timestamptz`).
 */
export const sortKeySql = (column: string): string => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** What a list reads: its rows (`from`, a table with a WHERE clause using `$1…$n` for `params`) and its order. */
export interface KeysetList {
  /** The cursor's name for the list; a cursor of another list (or other filters) is refused. */
  name: string;
  /** For example `api_tokens WHERE org_id = $1`. */
  from: string;
  /** The columns read (default: all of them); they include `id` and the sort column. */
  columns?: string;
  params: readonly unknown[];
  /** The timestamp column the list is sorted by; `id` breaks ties. */
  sortColumn: string;
  order: 'newest first' | 'oldest first';
  /** The type of the `id` column: uuid for platform ids, text for ids issued elsewhere (invoices). */
  idKind?: 'uuid' | 'text';
  /**
   * A name under which each connection prepares the page's statement (db/statements.ts), for a
   * list whose best plan does not depend on its values: no filter beyond the owner's id. A list
   * with filters stays unprepared, since their values decide which index serves it.
   */
  preparedAs?: string;
}

/**
 * One page of a list in keyset order: the rows after the cursor's position, `limit` of them
 * (the contract's default when absent), and the cursor of the next page when more follow. The one
 * implementation of pagination for every list the database holds.
 */
export async function keysetPage<Row extends { id: string }, Item>(
  db: Queryable,
  list: KeysetList,
  query: { cursor?: string; limit?: number },
  toItem: (row: Row) => Item,
): Promise<{ items: Item[]; next_cursor: string | null }> {
  const { pageSql, params, limit, direction } = pageQuery(list, query);
  // The cursor key is written after the LIMIT, for the page's rows only: where the plan sorts
  // (a label filter read through its index), a key written in the scan was written for every
  // matching row before the sort kept a page of them (1,000 of them for a label on 1%).
  const { rows } = await db.query<Row & { sort_key: string }>(
    `SELECT page.*, ${sortKeySql(`page.${list.sortColumn}`)} AS sort_key
     FROM (${pageSql}) page
     ORDER BY page.${list.sortColumn} ${direction}, page.id ${direction}`,
    params,
  );
  return page(list.name, rows, limit, (row) => ({ key: row.sort_key, id: row.id }), toItem);
}

/** An item of a list read by `keysetVersions`: its id and the version of its row. */
export interface Versioned {
  id: string;
  version: string;
}

/**
 * A page of a list as each item's id and row version (`list.columns` names them `id` and
 * `version`, beside the sort column), for lists whose answers are kept by version. The page
 * comes back as one row holding one string, rather than a row per item: for a page of a hundred,
 * pg's handling of a hundred rows (a message, an object and a parsed timestamp each) was most of
 * what reading it cost the server, for two short strings an item. Ids and versions hold neither
 * a space nor a comma (uuids or the `idKind` text ids, and digits), so they are split back without
 * escaping. Only the last item's sort key is written: the cursor's.
 */
export async function keysetVersions(
  db: Queryable,
  list: KeysetList,
  query: { cursor?: string; limit?: number },
): Promise<{ items: Versioned[]; next_cursor: string | null }> {
  const { pageSql, params, limit, direction, after } = pageQuery(list, query);
  const order = `page.${list.sortColumn} ${direction}, page.id ${direction}`;
  const text = `SELECT string_agg(page.id::text || ' ' || page.version, ',' ORDER BY ${order}) AS entries,
            count(*)::int AS count,
            ${sortKeySql(`(array_agg(page.${list.sortColumn} ORDER BY ${order}))[$${params.length}::int - 1]`)} AS last_key
     FROM (${pageSql}) page`;
  type PageRow = { entries: string | null; count: number; last_key: string | null };
  // Planning this statement took as long as running it (150 and 130 µs a page of 100, under load).
  const { rows } = list.preparedAs
    ? await runPrepared<PageRow>(db, prepared(`${list.preparedAs}_${after ? 'after' : 'first'}`, text), params)
    : await db.query<PageRow>(text, params);
  const { entries, count, last_key: lastKey } = rows[0] ?? { entries: null, count: 0, last_key: null };
  const items: Versioned[] = [];
  if (entries !== null) {
    for (const entry of entries.split(',')) {
      const space = entry.indexOf(' ');
      items.push({ id: entry.slice(0, space), version: entry.slice(space + 1) });
    }
  }
  const pageItems = items.slice(0, limit);
  const last = pageItems[pageItems.length - 1];
  return {
    items: pageItems,
    next_cursor: count > limit && last !== undefined && lastKey !== null ? encodeCursor(list.name, { key: lastKey, id: last.id }) : null,
  };
}

/** The SELECT of a page's rows, `limit + 1` of them after the cursor's position, and its parameters. */
function pageQuery(list: KeysetList, query: { cursor?: string; limit?: number }) {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE;
  const idKind = list.idKind ?? 'uuid';
  const after = decodeCursor(list.name, query.cursor, idKind);
  const params = [...list.params];
  const direction = list.order === 'newest first' ? 'DESC' : 'ASC';
  let position = '';
  if (after) {
    params.push(after.key, after.id);
    const comparison = direction === 'DESC' ? '<' : '>';
    position = ` AND (${list.sortColumn}, id) ${comparison} ($${params.length - 1}::timestamptz, $${params.length}::${idKind})`;
  }
  params.push(limit + 1);
  const pageSql = `SELECT ${list.columns ?? '*'} FROM ${list.from}${position}
           ORDER BY ${list.sortColumn} ${direction}, id ${direction} LIMIT $${params.length}`;
  return { pageSql, params, limit, direction, after };
}

/**
 * The name a cursor carries: the list and a digest of its filters, so that a cursor of another
 * list, or of the same list with other filters, is 400 invalid_cursor.
 */
export function listName(list: string, filters: Record<string, unknown> = {}): string {
  const digest = createHash('sha256').update(JSON.stringify(filters)).digest('base64url').slice(0, 12);
  return `${list}:${digest}`;
}

/** A page of rows ordered by (created_at, id), oldest first: the order of what customers create. */
export function oldestFirst<Row extends { id: string }, Item>(
  db: Queryable,
  name: string,
  query: { cursor?: string; limit?: number },
  from: { table: string; where: string; params: unknown[]; columns?: string },
  toItem: (row: Row) => Item,
) {
  return keysetPage(
    db,
    {
      name,
      from: `${from.table} WHERE ${from.where}`,
      columns: from.columns,
      params: from.params,
      sortColumn: 'created_at',
      order: 'oldest first',
    },
    query,
    toItem,
  );
}
