import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, streamText } from 'ai';
import { e2eStack } from './support/stack-env';

/** Clients written for OpenAI's API, pointed at base_url and otherwise unchanged. */
describe('OpenAI-compatible clients other than the openai package', () => {
  const stack = e2eStack();
  const [baseURL] = stack.apiUrls;

  describe('Vercel AI SDK (openai-compatible provider)', () => {
    const provider = createOpenAICompatible({ name: 'queued', baseURL, apiKey: stack.apiKey, includeUsage: true });
    const model = provider(stack.model);

    it('generates text with usage and a finish reason', async () => {
      // Greedy decoding of the tiny model runs to the token limit, so the finish reason is known.
      const result = await generateText({ model, prompt: 'Tell me about the rabbit.', maxOutputTokens: 20, temperature: 0, maxRetries: 0 });
      expect(result.text).toMatch(/[a-z]{2,}/);
      expect(result.finishReason).toBe('length');
      expect(result.usage.outputTokens).toBe(20);
      expect(result.usage.inputTokens).toBeGreaterThan(0);
    });

    it('streams text with a system prompt and stops at a stop sequence', async () => {
      const settings = { model, system: 'You are a storyteller.', prompt: 'Once upon a time', maxOutputTokens: 30, temperature: 0, maxRetries: 0 };
      // Greedy decoding gives the same text every time: its fourth word is a stop sequence that comes up.
      const free = await generateText(settings);
      const stop = ` ${free.text.trim().split(/\s+/)[3]}`;
      const result = streamText({ ...settings, stopSequences: [stop, 'zzzz'] });
      let text = '';
      for await (const piece of result.textStream) text += piece;
      expect(text).toBe(free.text.slice(0, free.text.indexOf(stop)));
      expect(await result.text).toBe(text);
      expect(await result.finishReason).toBe('stop');
    });
  });

  describe('LangChain ChatOpenAI', () => {
    const chat = new ChatOpenAI({
      model: stack.model,
      apiKey: stack.apiKey,
      configuration: { baseURL },
      maxTokens: 20,
      maxRetries: 0,
    });

    it('invokes with system and human messages and reports token usage', async () => {
      const message = await chat.invoke([new SystemMessage('You are terse.'), new HumanMessage('Hello there.')]);
      expect(typeof message.content).toBe('string');
      expect((message.content as string).length).toBeGreaterThan(0);
      expect(message.usage_metadata?.output_tokens).toBeGreaterThan(0);
    });

    it('streams chunks that add up to an answer', async () => {
      let text = '';
      for await (const chunk of await chat.stream('Tell me a story.')) text += typeof chunk.content === 'string' ? chunk.content : '';
      expect(text).toMatch(/[a-z]{2,}/);
    });
  });
});
