/**
 * The CLI's tables on a terminal: the first row is the header, columns are padded to their widest
 * cell and two spaces apart, and lines carry no trailing spaces. `--json` is what scripts read.
 */
export function textTable(rows: readonly (readonly string[])[]): string {
  if (rows.length === 0) return '';
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
