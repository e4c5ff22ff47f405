import { request } from 'node:http';

/**
 * Posts a body of `size` bytes, a piece at a time, and returns the response the server sends
 * while it is still arriving. The server answers an oversized body as soon as its
 * Content-Length is known and then closes the connection, so a client that writes the whole
 * body first (fetch does) may see only a broken pipe.
 */
export function postOversized(url: string, headers: Record<string, string>, size: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(url, { method: 'POST', headers: { ...headers, 'content-length': String(size) } });
    req.on('response', (res) => {
      answered = true;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    const piece = Buffer.alloc(64 * 1024, 'x');
    let sent = 0;
    const writeMore = (): void => {
      if (answered || req.destroyed || sent >= size) return;
      const chunk = piece.subarray(0, Math.min(piece.length, size - sent));
      sent += chunk.length;
      req.write(chunk, () => setTimeout(writeMore, 1));
    };
    writeMore();
  });
}
