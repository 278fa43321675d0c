/** A token's expiry as people write it (`paddock tokens create --expires`, `POST /v1/tokens`): one reading for both. */

const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A duration from now: `<n>m|h|d`, n from 1 to 99999. */
export const EXPIRY_DURATION = /^([1-9][0-9]{0,4})([mhd])$/;

/** An ISO 8601 date-time with its zone (`Z` or `±hh:mm`). */
const EXPIRY_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** `now` plus a duration such as `30d`, or undefined when `text` is not one. */
export function expiryAfter(text: string, now = new Date()): Date | undefined {
  const m = EXPIRY_DURATION.exec(text);
  return m ? new Date(now.getTime() + Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS]) : undefined;
}

/** The instant of an ISO date-time with its zone, or undefined when `text` is not one. */
export function expiryInstant(text: string): Date | undefined {
  if (!EXPIRY_INSTANT.test(text)) return undefined;
  const at = new Date(text);
  return Number.isNaN(at.getTime()) ? undefined : at;
}
