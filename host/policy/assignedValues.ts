/** The values of `KEY=value` lines (dotenv, shell, ini): quotes and `export` removed, 8 characters or more. */
export function assignedValues(text: string): string[] {
  const values: string[] = [];
  for (const line of text.split(/\r?\n/).slice(0, 10_000)) {
    const m = /^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*[=:]\s*(.*?)\s*$/.exec(line);
    if (!m) continue;
    const value = m[1]!.replace(/^(['"])(.*)\1$/, '$2');
    if (value.length >= 8) values.push(value);
  }
  return values;
}
