/**
 * One chat completion request over fetch, as any client would send it: the response, body unread.
 * Shared by the tests and the benchmarks that are not load tests; `signal` aborts it mid-answer.
 */
export function postChatCompletion(baseUrl: string, apiKey: string, body: object, signal?: AbortSignal): Promise<Response> {
  return fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
}
