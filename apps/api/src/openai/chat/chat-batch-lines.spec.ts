import { chatBatchLines } from './chat-batch-lines';

const body = { model: 'tiny-chat', messages: [{ role: 'user', content: 'Hi' }] };
const lineJob = chatBatchLines.lineJob.bind(chatBatchLines);

describe('chat batch lines', () => {
  it('checks a body as the chat endpoint does, and refuses stream and store by name', async () => {
    await expect(lineJob({ ...body, temperature: 9 }, 'c-1', 0, 1)).rejects.toMatchObject({ status: 400, param: 'temperature' });
    await expect(lineJob({ ...body, stream: true }, 'c-1', 0, 1)).rejects.toMatchObject({ status: 400, param: 'stream' });
    await expect(lineJob({ ...body, store: true }, 'c-1', 0, 1)).rejects.toMatchObject({ status: 400, param: 'store' });
    await expect(lineJob(body, 'c-1', 1000, 5000)).resolves.toMatchObject({
      id: 'c-1',
      model: 'tiny-chat',
      schedule: { acceptedAt: 1000, startDeadline: 5000 },
    });
  });
});
