import type { EngineCapabilities } from '@app/contracts';
import type { Llama, LlamaModel, Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { GenerationAbortedError, inputTooLong } from '../inference-engine';
import type { EmbeddingOutcome, GenerationOutcome, InferenceEngine, RankOutcome, RankRequest, TokenizeOutcome, TokenizeRequest } from '../inference-engine';
import { noGenerationCapabilities } from '../llama-sampling';
import type { RunningServer } from './llama-server-process';
import { ServerBackedEngine } from './server-backed-engine';

/** Tokenizer pre-types llama.cpp gives a separator token after each part (its llama-vocab.cpp), beside WordPiece vocabularies. */
const SEPARATED_PRE_TYPES = new Set(['jina-v1-en', 'jina-v2-code', 'roberta-bpe']);

/** What llama.cpp's rerank pooling scores a pair by: Qwen3's graph takes a softmax already; the others' first logit is raw. */
const NORMALISED_ARCHITECTURES = new Set(['qwen3', 'qwen3vl']);

/** llama-server's `/rerank` answer (Jina's shape), with one result per document. */
interface ServerRerank {
  results: Array<{ index: number; relevance_score: number }>;
  usage: { prompt_tokens: number };
}

/**
 * The tokens llama-server evaluates for a query and a document (its `format_prompt_rerank`): the
 * model's rerank template filled with both, special tokens parsed; else the two as text, with the
 * start, end and separator tokens the vocabulary asks for. The worker lays them out only to
 * measure a pair before the server sees it: the server does the layout itself.
 */
export function rerankPairTokens(model: LlamaModel, query: string, document: string): Token[] {
  const tokenizer = (model.fileInfo.metadata as { tokenizer?: Record<string, unknown> }).tokenizer ?? {};
  const template = tokenizer['chat_template.rerank'];
  if (typeof template === 'string') return model.tokenize(template.replaceAll('{query}', query).replaceAll('{document}', document), true);
  const ggml = (tokenizer.ggml ?? {}) as { add_sep_token?: boolean; pre?: string };
  const addSeparator = ggml.add_sep_token ?? (String(model.vocabularyType) === 'wpm' || SEPARATED_PRE_TYPES.has(ggml.pre ?? ''));
  const { bos, eos, sep, shouldPrependBosToken, shouldAppendEosToken } = model.tokens;
  const end = eos ?? sep;
  const endTokens = shouldAppendEosToken && end !== null ? [end] : [];
  return [
    ...(shouldPrependBosToken && bos !== null ? [bos] : []),
    ...model.tokenize(query, false),
    ...endTokens,
    ...(addSeparator && sep !== null ? [sep] : []),
    ...model.tokenize(document, false),
    ...endTokens,
  ];
}

/**
 * llama-server as the engine of a reranker (`--reranking`): one `/rerank` request carries a job's
 * documents, which the server lays out with the query as llama.cpp does and spreads over its
 * slots. Scores are probabilities on both engines: the server's raw logit goes through a sigmoid
 * as node-llama-cpp's ranking context does, except where the model's graph already ends in a
 * softmax. Pairs are laid out as llama.cpp lays them out, which is not always node-llama-cpp's
 * layout (it adds every start, end and separator token the vocabulary has), so one model can
 * score a little differently on the two engines (docs/operations.md).
 */
export class LlamaServerRankingEngine extends ServerBackedEngine implements InferenceEngine {
  readonly capabilities: EngineCapabilities;
  private readonly normalised: boolean;

  constructor(
    llama: Llama,
    model: LlamaModel,
    server: RunningServer,
    readonly contextSize: number,
    readonly slots: number,
  ) {
    super(llama, model, server);
    this.capabilities = { kinds: ['rank', 'tokenize'], ...noGenerationCapabilities(model) };
    this.normalised = NORMALISED_ARCHITECTURES.has(String(model.fileInfo.metadata?.general?.architecture));
  }

  /** Every pair is measured first, as on the llama engine: a document that cannot fit with the query fails the job before any is scored. */
  async rank({ query, documents, signal, output }: RankRequest): Promise<RankOutcome> {
    const longest = Math.max(...documents.map((document) => rerankPairTokens(this.model, query, document).length));
    if (longest >= this.contextSize) throw inputTooLong(this.contextSize, longest);
    let answered: ServerRerank;
    try {
      const response = await fetch(`${this.server.url}/rerank`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, documents, top_n: documents.length }),
        signal,
      });
      if (!response.ok) throw new Error(`llama-server answered /rerank with ${response.status}: ${await response.text()}`);
      answered = (await response.json()) as ServerRerank;
    } catch (error) {
      if (signal.aborted) throw new GenerationAbortedError();
      throw error;
    }
    for (const { index, relevance_score: score } of answered.results)
      output.write({ type: 'score', index, score: this.normalised ? score : 1 / (1 + Math.exp(-score)) });
    return { promptTokens: answered.usage.prompt_tokens };
  }

  generate(): Promise<GenerationOutcome> {
    return Promise.reject(new Error('a reranker does not generate'));
  }

  embed(): Promise<EmbeddingOutcome> {
    return Promise.reject(new Error('a reranker does not embed'));
  }

  tokenize(request: TokenizeRequest): Promise<TokenizeOutcome> {
    return this.vocabularyTokenize(request);
  }
}
