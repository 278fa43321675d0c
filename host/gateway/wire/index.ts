import { anthropicWire } from './anthropic.js';
import { chatWire } from './chat.js';
import { responsesWire } from './responses.js';
import type { Wire, WireFormat } from './types.js';

export * from './types.js';

/** Every wire format the gateway serves, by name. */
export const WIRES: Record<WireFormat, Wire> = { anthropic: anthropicWire, responses: responsesWire, chat: chatWire };
