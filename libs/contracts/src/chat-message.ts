/** Roles as the engine sees them (the API maps OpenAI's `developer` onto `system`). */
export type ChatRole = 'system' | 'user' | 'assistant';

export interface ChatMessage {
  role: ChatRole;
  content: string;
}
