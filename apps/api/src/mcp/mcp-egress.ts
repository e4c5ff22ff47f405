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

/** Where one exchange may connect. */
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
 * The HTTP side of one exchange with one MCP server (a listing or a call): a fetch for the MCP
 * client's transport that connects only to the server's origin, only to addresses the policy
 * allows (judged at connect time, on every address DNS gives, so a name that resolves elsewhere
 * the second time gains nothing), follows no redirect, cuts a body beyond `maxBytes` and the whole
 * exchange at `timeoutMs`. Its own connection pool is destroyed by `close`: nothing outlives it.
 */
export class McpEgress {
  private readonly controller = new AbortController();
  private readonly agent: Agent;
  private readonly timer: NodeJS.Timeout;
  private failed: EgressFailure | undefined;
  private readonly onCallerAbort = (): void => {
    this.fail({ outcome: 'cancelled', code: 499, message: 'The request was cancelled.' });
  };

  constructor(
    private readonly origin: URL,
    policy: EgressPolicy,
    private readonly limits: EgressLimits,
    private readonly callerSignal?: AbortSignal,
  ) {
    this.agent = new Agent({ connect: guardedConnector(effectivePort(origin), policy, limits.timeoutMs, (failure) => this.fail(failure)) });
    this.timer = setTimeout(
      () => this.fail({ outcome: 'timeout', code: 504, message: `The MCP server did not answer within ${limits.timeoutMs} ms.` }),
      limits.timeoutMs,
    );
    if (callerSignal?.aborted) this.onCallerAbort();
    else callerSignal?.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  /** Aborted when the exchange is cut short (or closed): hand it to every MCP request. */
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

  /** The fetch the MCP transport uses. */
  readonly fetch = async (input: string | URL, init?: RequestInit): Promise<Response> => {
    const url = new URL(input);
    if (url.origin !== this.origin.origin)
      throw this.fail({ outcome: 'refused', code: 403, message: "Refused: the MCP client asked for a URL outside the server's origin." });
    if (this.failed) throw new McpEgressError(this.failed);
    const signal = init?.signal ? AbortSignal.any([this.controller.signal, init.signal]) : this.controller.signal;
    let response: UndiciResponse;
    try {
      response = await undiciFetch(url, { ...(init as UndiciRequestInit), redirect: 'manual', signal, dispatcher: this.agent });
    } catch (error) {
      throw this.failed ? new McpEgressError(this.failed) : error;
    }
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel().catch(() => undefined);
      throw this.fail({
        outcome: 'http_error',
        code: response.status,
        message: `The MCP server answered HTTP ${response.status}, a redirect, which this service does not follow.`,
      });
    }
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    if (declared > this.limits.maxBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw this.fail(this.tooLarge());
    }
    if (response.body === null) return response;
    const counted = new UndiciResponse(response.body.pipeThrough(this.byteLimit()), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    return counted;
  };

  /** Ends the exchange: stops its timer and destroys its connections. */
  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.callerSignal?.removeEventListener('abort', this.onCallerAbort);
    if (!this.controller.signal.aborted) this.controller.abort();
    await this.agent.destroy().catch(() => undefined);
  }

  private tooLarge(): EgressFailure {
    return { outcome: 'http_error', code: 413, message: `The MCP server's answer is larger than ${this.limits.maxBytes} bytes.` };
  }

  private byteLimit(): TransformStream<Uint8Array, Uint8Array> {
    let bytes = 0;
    return new TransformStream({
      transform: (chunk, controller) => {
        bytes += chunk.byteLength;
        if (bytes > this.limits.maxBytes) controller.error(this.fail(this.tooLarge()));
        else controller.enqueue(chunk);
      },
    });
  }
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
