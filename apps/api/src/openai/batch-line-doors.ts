import { chatBatchLines } from './chat/chat-batch-lines';
import type { BatchLineDoor } from './common/batch-line-door';
import { embeddingsBatchLines } from './embeddings/embeddings-batch-lines';
import { textCompletionBatchLines } from './text-completions/text-completion-batch-lines';

/** The front doors whose requests a batch may hold; a door that takes batch lines adds its adapter here. */
export const BATCH_LINE_DOORS: readonly BatchLineDoor[] = [chatBatchLines, embeddingsBatchLines, textCompletionBatchLines];
