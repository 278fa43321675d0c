/** Most characters of an untrusted value (a runner's path, an option's value) echoed in a message. */
export const ECHO_MAX_CHARS = 160;

/**
 * An untrusted value as it may be echoed back in an error message or an audit reason: at most
 * {@link ECHO_MAX_CHARS} characters, with how many more were cut, so a 5,000-character path or a
 * megabyte option value never comes back whole.
 */
export function clip(value: string, max = ECHO_MAX_CHARS): string {
  return value.length <= max ? value : `${value.slice(0, max)}…(${value.length - max} more characters)`;
}
