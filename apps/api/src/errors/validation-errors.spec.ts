import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { ChatCompletionRequestDto } from '../openai/chat/chat-request.dto';
import { validationErrorToOpenAi } from './validation-errors';

function errorFor(body: object) {
  const dto = plainToInstance(ChatCompletionRequestDto, body);
  const errors = validateSync(dto, { whitelist: true, forbidNonWhitelisted: true });
  return validationErrorToOpenAi(errors).toBody().error;
}

describe('validationErrorToOpenAi', () => {
  const messages = [{ role: 'user', content: 'hi' }];

  it('names a nested field the way OpenAI does', () => {
    expect(
      errorFor({
        model: 'm',
        messages: [
          { role: 'user', content: 'a' },
          { role: 'x', content: 'b' },
        ],
      }).param,
    ).toBe('messages[1].role');
  });

  it('reports the wrong type before any other rule of the same field', () => {
    const error = errorFor({ model: 'm', messages: 'hi' });
    expect(error.param).toBe('messages');
    expect(error.message).toMatch(/array/);
  });

  it('refuses fields it does not implement by name', () => {
    const error = errorFor({ model: 'm', messages, audio: { voice: 'alloy', format: 'mp3' } });
    expect(error).toMatchObject({ param: 'audio', type: 'invalid_request_error' });
    expect(error.message).toMatch(/Unrecognized request argument supplied: audio/);
  });
});
