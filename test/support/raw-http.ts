import { connect } from 'node:net';
import type { Socket } from 'node:net';

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

/**
 * A kept-alive connection whose bytes are collected as they come, for requests written behind one
 * still being answered (pipelined, as HTTP/1.1 allows): what a prober on an open connection sees.
 */
export class RawConnection {
  private text = '';
  /** Everything received, once the server has closed the connection. */
  readonly closed: Promise<string>;
  private readonly socket: Socket;

  constructor(url: string) {
    const { hostname, port } = new URL(url);
    this.socket = connect(Number(port), hostname);
    this.socket.on('data', (chunk: Buffer) => (this.text += chunk.toString('utf8')));
    this.socket.on('error', () => undefined); // judged on what arrived before the close
    this.closed = new Promise((resolve) => this.socket.on('close', () => resolve(this.text)));
  }

  get received(): string {
    return this.text;
  }

  write(data: string): void {
    this.socket.write(data);
  }
}

/** The last response in `text` (a connection's bytes, earlier responses included): its status and JSON body. */
export function lastResponse(text: string): { status: number; body: unknown } {
  const start = text.lastIndexOf('HTTP/1.1 ');
  const match = /^HTTP\/1\.1 (\d{3})[^\r]*\r\n[\s\S]*?\r\n\r\n([\s\S]*)$/.exec(text.slice(start));
  if (start < 0 || !match) throw new Error(`no HTTP response in ${JSON.stringify(text.slice(-300))}`);
  return { status: Number(match[1]), body: JSON.parse(match[2]) as unknown };
}
