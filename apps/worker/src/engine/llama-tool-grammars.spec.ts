import type { ToolDefinition } from '@app/contracts';
import { LlamaToolGrammars } from './llama-tool-grammars';

const tool: ToolDefinition = { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

/** The stand-in's constant: what node-llama-cpp writes into the GBNF it renders for the tool. */
function markerOf(grammars: LlamaToolGrammars): string {
  const { functions, release } = grammars.acquire([tool]);
  release();
  const standIn = functions.get_weather.params as unknown as { oneOf: [unknown, { const: string }] };
  return standIn.oneOf[1].const;
}

describe('LlamaToolGrammars.substitute', () => {
  it("gives a running job's tool grammar for text that holds its marker, and any other grammar as it is", () => {
    const grammars = new LlamaToolGrammars();
    const { functions, release } = grammars.acquire([tool]);
    const marker = (functions.get_weather.params as unknown as { oneOf: [unknown, { const: string }] }).oneOf[1].const;
    expect(grammars.substitute(`root ::= "\\"${marker}\\""`)).toContain('city');
    expect(grammars.substitute('root ::= "yes" | "no"')).toBe('root ::= "yes" | "no"');
    release();
  });

  it("leaves alone a request's grammar that holds another engine's marker (a response format's enum value)", () => {
    const other = markerOf(new LlamaToolGrammars());
    const grammars = new LlamaToolGrammars();
    const { release } = grammars.acquire([tool]);
    const userGrammar = `root ::= "\\"${other}\\""`;
    expect(grammars.substitute(userGrammar)).toBe(userGrammar);
    release();
  });
});
