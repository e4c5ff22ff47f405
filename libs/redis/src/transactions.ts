/**
 * The replies of a MULTI … EXEC, each command's result in order. ioredis resolves a transaction
 * with [error, result] pairs and rejects only when EXEC itself fails: a failed command throws here.
 */
export function execResults(replies: Array<[Error | null, unknown]> | null): unknown[] {
  if (replies === null) throw new Error('transaction aborted');
  const failed = replies.find(([error]) => error)?.[0];
  if (failed) throw failed;
  return replies.map(([, result]) => result);
}
