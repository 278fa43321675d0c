import type { ChatEvent } from '../protocol/types.js';

/** The text of a chat event: its text parts joined by newlines (other parts are skipped). */
export function eventText(event: ChatEvent): string {
  return event.message.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
}
