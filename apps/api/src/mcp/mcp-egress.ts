import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { LookupFunction } from 'node:net';
import { Agent, Response as UndiciResponse, buildConnector, fetch as undiciFetch } from 'undici';
import type { RequestInit as UndiciRequestInit } from 'undici';
import { effectivePort } from './mcp-allowlist';
import { bareAddress, specialRange } from './mcp-address-policy';
import type { ReservedEndpoints } from './mcp-reserved-endpoints';

/** Why an exchange with an MCP server was cut short by this side: what the metrics count it as, and the `http_error` the model sees. */
export interface EgressFailure {
  outcome: 'refused' | 'timeout' | 'http_error' | 'cancelled';
  code: number;
  message: string;
}

/** Thrown into the MCP client when the guard cut an exchange short; `failure` says why. */
export class McpEgressError extends Error {
  constructor(readonly failure: EgressFailure) {
    super(failure.message);
    this.name = 'McpEgressError';
  }
}

/** Where a session may connect. */
export interface EgressPolicy {
  /** Special-purpose addresses (loopback, private, link-local…) may be reached: an allowlist entry or a registration names the host. */
  allowSpecialAddresses: boolean;
  /** Never reached (the service's own Redis). */
  reserved: ReservedEndpoints;
}

export interface EgressLimits {
  /** The whole exchange, connecting included. */
  timeoutMs: number;
  /** One response body, counted as it arrives. */
  maxBytes: number;
}

const refusedAddress = (what: string): EgressFailure => ({
  outcome: 'refused',
  code: 403,
  message: `Refused: the MCP server's host is ${what}, which this service does not connect to.`,
});

/**
 * The bounds of one exchange (a listing, a call, a session's goodbye), whichever session it runs
 * on: cut at `timeoutMs` from its start or when the caller's signal aborts, each response body of
 * it at `maxBytes`. Ended by `end`, which also cuts whatever of it is still streaming.
 */
export class McpExchange {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private failed: EgressFailure | undefined;
  /** The last HTTP status ≥400 a response of this exchange carried, if any. */
  httpStatus: number | undefined;
  private readonly onCallerAbort = (): void => {
    this.fail({ outcome: 'cancelled', code: 499, message: 'The request was cancelled.' });
  };

  constructor(
    readonly limits: EgressLimits,
    private readonly callerSignal?: AbortSignal,
  ) {
    this.timer = setTimeout(
      () => this.fail({ outcome: 'timeout', code: 504, message: `The MCP server did not answer within ${limits.timeoutMs} ms.` }),
      limits.timeoutMs,
    );
    if (callerSignal?.aborted) this.onCallerAbort();
    else callerSignal?.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  /** Aborted when the exchange is cut short (or ended): hand it to every MCP request. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Why the exchange was cut short, if it was. */
  get failure(): EgressFailure | undefined {
    return this.failed;
  }

  /** Cuts the exchange short; the first reason given is the one kept. */
  fail(failure: EgressFailure): McpEgressError {
    this.failed ??= failure;
    const error = new McpEgressError(this.failed);
    if (!this.controller.signal.aborted) this.controller.abort(error);
    return error;
  }

  /** Stops its timer and cuts what of it is still under way. */
  end(): void {
    clearTimeout(this.timer);
    this.callerSignal?.removeEventListener('abort', this.onCallerAbort);
    if (!this.controller.signal.aborted) this.controller.abort();
  }
}

/**
 * The HTTP side of one MCP session with one server: a fetch for the MCP client's transport that
 * connects only to the server's origin, only to addresses the policy allows (judged at connect
 * time, on every address DNS gives, for every connection its pool opens, so a name that resolves
 * elsewhere the second time gains nothing), follows no redirect, and runs only inside an exchange
 * (`begin`…`end`), whose bounds cut it. It opens no standing GET stream: the service listens to
 * nothing a server says outside an answer, and such a stream would be bytes and a socket outside
 * any exchange's bounds. Its connection pool is destroyed by `close`: nothing outlives it.
 */
export class McpEgress {
  private readonly agent: Agent;
  private current: McpExchange | undefined;

  constructor(
    private readonly origin: URL,
    policy: EgressPolicy,
    timeoutMs: number,
  ) {
    this.agent = new Agent({ connect: guardedConnector(effectivePort(origin), policy, timeoutMs, (failure) => this.refuse(failure)) });
  }

  /** The exchange the fetch now serves; one at a time. */
  begin(exchange: McpExchange): void {
    if (this.current) throw new Error('McpEgress: an exchange is already under way');
    this.current = exchange;
  }

  end(exchange: McpExchange): void {
    if (this.current === exchange) this.current = undefined;
  }

  /** The fetch the MCP transport uses. */
  readonly fetch = async (input: string | URL, init?: RequestInit): Promise<Response> => {
    // "Method Not Allowed" is how a server says it offers no standing stream; the client then goes without.
    if ((init?.method ?? 'GET').toUpperCase() === 'GET') return new UndiciResponse(null, { status: 405 });
    const exchange = this.current;
    if (!exchange) throw new McpEgressError({ outcome: 'refused', code: 403, message: 'Refused: the MCP client reached for its server outside an exchange.' });
    const url = new URL(input);
    if (url.origin !== this.origin.origin)
      throw exchange.fail({ outcome: 'refused', code: 403, message: "Refused: the MCP client asked for a URL outside the server's origin." });
    if (exchange.failure) throw new McpEgressError(exchange.failure);
    const signal = init?.signal ? AbortSignal.any([exchange.signal, init.signal]) : exchange.signal;
    let response: UndiciResponse;
    try {
      response = await undiciFetch(url, { ...(init as UndiciRequestInit), redirect: 'manual', signal, dispatcher: this.agent });
    } catch (error) {
      throw exchange.failure ? new McpEgressError(exchange.failure) : error;
    }
    if (response.status >= 400) exchange.httpStatus = response.status;
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel().catch(() => undefined);
      throw exchange.fail({
        outcome: 'http_error',
        code: response.status,
        message: `The MCP server answered HTTP ${response.status}, a redirect, which this service does not follow.`,
      });
    }
    const { maxBytes } = exchange.limits;
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    if (declared > maxBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw exchange.fail(tooLarge(maxBytes));
    }
    if (response.body === null) return response;
    const counted = new UndiciResponse(response.body.pipeThrough(byteLimit(exchange)), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    return counted;
  };

  /** Destroys its connections. */
  async close(): Promise<void> {
    this.current = undefined;
    await this.agent.destroy().catch(() => undefined);
  }

  /** A connection refused by the policy fails the exchange that asked for it. */
  private refuse(failure: EgressFailure): McpEgressError {
    return this.current ? this.current.fail(failure) : new McpEgressError(failure);
  }
}

function tooLarge(maxBytes: number): EgressFailure {
  return { outcome: 'http_error', code: 413, message: `The MCP server's answer is larger than ${maxBytes} bytes.` };
}

/** Cuts one response body of `exchange` beyond its `maxBytes`, counted as it arrives. */
function byteLimit(exchange: McpExchange): TransformStream<Uint8Array, Uint8Array> {
  let bytes = 0;
  return new TransformStream({
    transform: (chunk, controller) => {
      bytes += chunk.byteLength;
      if (bytes > exchange.limits.maxBytes) controller.error(exchange.fail(tooLarge(exchange.limits.maxBytes)));
      else controller.enqueue(chunk);
    },
  });
}

/**
 * undici's connector, judging where it connects first: an IP literal before the socket opens
 * (Node looks nothing up for one), a name inside its DNS lookup, on every address it resolves to.
 */
function guardedConnector(port: number, policy: EgressPolicy, timeoutMs: number, refuse: (failure: EgressFailure) => McpEgressError): buildConnector.connector {
  const judge = async (address: string): Promise<EgressFailure | undefined> => {
    if (await policy.reserved.covers(address, port)) return refusedAddress("this service's own Redis");
    const range = specialRange(address);
    return range !== undefined && !policy.allowSpecialAddresses ? refusedAddress(`at a ${range} address`) : undefined;
  };
  const lookup: LookupFunction = (hostname: string, options: LookupOptions, callback) => {
    const resolved = async (): Promise<LookupAddress[]> => {
      const addresses = await dnsLookup(hostname, { all: true, verbatim: true });
      for (const { address } of addresses) {
        const failure = await judge(address);
        if (failure) throw refuse(failure);
      }
      const wanted = options.family === 4 || options.family === 6 ? addresses.filter(({ family }) => family === options.family) : addresses;
      if (wanted.length === 0) throw Object.assign(new Error(`no IPv${options.family} address`), { code: 'ENOTFOUND' });
      return wanted;
    };
    resolved().then(
      (addresses) => (options.all ? callback(null, addresses) : callback(null, addresses[0].address, addresses[0].family)),
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };
  const connect = buildConnector({ timeout: timeoutMs, lookup });
  return (options, callback) => {
    const host = bareAddress(options.hostname);
    if (isIP(host) === 0) {
      connect(options, callback);
      return;
    }
    judge(host).then(
      (failure) => (failure ? callback(refuse(failure), null) : connect(options, callback)),
      (error: Error) => callback(error, null),
    );
  };
}
