// A table that stays readable on a narrow window: each cell carries its column's name, and the stylesheet stacks
// rows into labelled blocks below 700 px.
import type { ComponentChildren } from 'preact';

/** One column: its heading and how a row shows in it. */
export interface Column<T> {
  title: string;
  cell: (row: T) => ComponentChildren;
  /** Right-aligned numbers. */
  numeric?: boolean;
}

/** Rows of `T` under `columns`; `empty` when there are none. */
export function Table<T>(props: {
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  empty: string;
  caption?: string;
}) {
  if (props.rows.length === 0) return <p class="empty">{props.empty}</p>;
  return (
    <div class="table-wrap">
      <table>
        {props.caption ? <caption>{props.caption}</caption> : null}
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th key={c.title} scope="col" class={c.numeric ? 'num' : undefined}>
                {c.title}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr key={props.rowKey(row)}>
              {props.columns.map((c) => (
                <td key={c.title} data-label={c.title} class={c.numeric ? 'num' : undefined}>
                  {c.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
