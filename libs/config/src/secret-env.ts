import { ValidateBy } from 'class-validator';

/** Names of the secret variables declared on each env class's prototype (an env class inherits its parents'). */
const secretsByPrototype = new WeakMap<object, Set<string>>();

/**
 * Marks an environment variable whose value is a secret (a key, a password, a token): a
 * configuration error names it and says what is wrong, but never shows its value.
 */
export const SecretEnv = (): PropertyDecorator => (target, property) => {
  const names = secretsByPrototype.get(target) ?? new Set<string>();
  names.add(String(property));
  secretsByPrototype.set(target, names);
};

/** Whether `name` is marked secret on `config`'s env class or one it extends. */
export function isSecretEnv(config: object, name: string): boolean {
  for (
    let prototype: object | null = Object.getPrototypeOf(config) as object | null;
    prototype;
    prototype = Object.getPrototypeOf(prototype) as object | null
  ) {
    if (secretsByPrototype.get(prototype)?.has(name)) return true;
  }
  return false;
}

/**
 * The user-info part of a URL (`scheme://user:password@`), up to the last `@` before the path. A
 * malformed one may hold spaces, so only a line break, a quote or the path ends it: this may mask
 * more than the credentials, never less.
 */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)([^\r\n"'/?#]*)@/gi;

/**
 * Masks the credentials of every URL in `text`: `redis://:pw@host:6379` → `redis://:***@host:6379`,
 * `redis://user:pw@host` → `redis://user:***@host`; a lone user name (often a token) is masked whole.
 */
export function maskUrlCredentials(text: string): string {
  return text.replace(URL_CREDENTIALS, (_match, scheme: string, userInfo: string) => {
    const colon = userInfo.indexOf(':');
    return `${scheme}${colon >= 0 ? userInfo.slice(0, colon) + ':***' : '***'}@`;
  });
}

function hasCredentials(value: string): boolean {
  try {
    const url = new URL(value);
    return url.username !== '' || url.password !== '';
  } catch {
    return false; // not a URL at all: the variable's own URL check says so
  }
}

/** Refuses a URL with `user:password@` in it, where the credential belongs in a variable of its own (`message` says which). */
export const NoUrlCredentials = (message: string): PropertyDecorator =>
  ValidateBy({
    name: 'noUrlCredentials',
    validator: { validate: (value: unknown) => typeof value !== 'string' || !hasCredentials(value), defaultMessage: () => message },
  });
