/** The runner protocol version this SDK and host speak. See docs/protocol.md#versioning. */
export const PROTOCOL_VERSION = 1;

/** Protocol versions a host built from this tree accepts from a runner. */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly number[] = [1];
