/**
 * `npm run bench:stop-sequences`: what matching stop sequences costs per answer, by answer
 * length: every engine passes each generated token through StopSequences.
 */
import { StopSequences, syntheticToken } from '@app/worker/engine';

function msPerAnswer(tokens: number, stop: string[]): number {
  const answers = Math.max(3, Math.round(200_000 / tokens));
  let sink = 0;
  const started = performance.now();
  for (let answer = 0; answer < answers; answer += 1) {
    const matcher = new StopSequences(stop, (text) => (sink += text.length));
    for (let token = 0; token < tokens; token += 1) matcher.push(syntheticToken(token));
    sink += matcher.finish().length;
  }
  if (sink < 0) throw new Error('unreachable');
  return (performance.now() - started) / answers;
}

for (const stop of [[], ['</answer>', 'END']]) {
  for (const tokens of [64, 1_000, 4_000, 16_000]) {
    console.log(`${String(tokens).padStart(6)} tokens, ${stop.length} stop sequences: ${msPerAnswer(tokens, stop).toFixed(3)} ms per answer`);
  }
}
