import { connect } from 'node:net';

export interface RawExchange {
  status: number;
  headers: string;
  body: string;
}

/**
 * Writes `data` to a fresh TCP connection as is (malformed HTTP included) and reads until the
 * server closes it, or `timeoutMs` passes. Parses the first response on the wire.
 */
export function rawHttp(url: string, data: string | Buffer, timeoutMs = 10_000): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined); // a reset after the answer is the server closing; judged on close
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const match = /^HTTP\/1\.1 (\d{3})[^\r]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(text);
      if (!match) reject(new Error(`not an HTTP response: ${JSON.stringify(text.slice(0, 300))}`));
      else resolve({ status: Number(match[1]), headers: match[2].toLowerCase(), body: match[3] });
    });
    socket.write(data);
  });
}
