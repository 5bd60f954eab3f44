import type { Queryable } from './pool.ts';

/**
 * `UPDATE <table> SET <changed columns>, updated_at = now() WHERE id = $1 RETURNING *`: the one
 * way a repository changes some columns of a row. Column names in the SQL come from `columns`, the
 * table's allow-list, never from the object; a key outside it is a programming error. Objects and
 * arrays are written as JSON (jsonb columns). With `onlyInState`, the row changes only while it is
 * in that state, so an operation finishing late never undoes a later change.
 */
export async function updateRow<Row>(
  db: Queryable,
  table: string,
  id: string,
  changes: object,
  columns: readonly string[],
  onlyInState?: string,
): Promise<Row | undefined> {
  const entries: Array<[string, unknown]> = Object.entries(changes);
  const unknown = entries.map(([column]) => column).filter((column) => !columns.includes(column));
  if (unknown.length > 0) throw new Error(`${table}: cannot update ${unknown.join(', ')}`);
  const values: unknown[] = [
    id,
    ...entries.map(([, value]) =>
      value !== null && typeof value === 'object' && !(value instanceof Date) ? JSON.stringify(value) : value,
    ),
  ];
  const assignments = [...entries.map(([column], index) => `${column} = $${index + 2}`), 'updated_at = now()'];
  let condition = '';
  if (onlyInState !== undefined) {
    values.push(onlyInState);
    condition = ` AND state = $${values.length}`;
  }
  const { rows } = await db.query(`UPDATE ${table} SET ${assignments.join(', ')} WHERE id = $1${condition} RETURNING *`, values);
  return rows[0] as Row | undefined;
}
