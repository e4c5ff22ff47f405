/**
 * The `format`s a grammar enforces, each as a regular expression over the whole string. Each
 * allows a subset of what the format allows, chosen so that common validators (ajv-formats,
 * zod's own patterns) accept every value: real calendar dates (leap years included), offsets
 * within a day, octets up to 255, hosts and addresses of bounded length.
 */
const DAY_OF_MONTH = '(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8]))';
const LEAP_YEAR = '(?:\\d\\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)';
const DATE = `(?:\\d{4}-${DAY_OF_MONTH}|${LEAP_YEAR}-02-29)`;
const TIME = '(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d{1,6})?(?:Z|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)';
const DURATION_DATE = '(?:\\d{1,4}Y(?:\\d{1,4}M)?(?:\\d{1,4}D)?|\\d{1,4}M(?:\\d{1,4}D)?|\\d{1,4}D)';
const DURATION_TIME = 'T(?:\\d{1,4}H(?:\\d{1,4}M)?(?:\\d{1,4}S)?|\\d{1,4}M(?:\\d{1,4}S)?|\\d{1,4}S)';
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?';
/** A host whose last label has letters only: WHATWG URL parsing reads a numeric one as an IPv4 address. */
const HOSTNAME = `(?:${LABEL}\\.){0,4}[a-z]{2,12}`;
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const HEX_GROUP = '[0-9a-f]{1,4}';
const PATH = '(?:/[A-Za-z0-9._~-]{1,32}){0,6}';

export const STRING_FORMATS: Record<string, string> = {
  date: `^${DATE}$`,
  time: `^${TIME}$`,
  'date-time': `^${DATE}T${TIME}$`,
  duration: `^P(?:${DURATION_DATE}(?:${DURATION_TIME})?|${DURATION_TIME}|\\d{1,4}W)$`,
  email: `^[A-Za-z0-9_+-]{1,32}(?:\\.[A-Za-z0-9_+-]{1,32}){0,2}@(?:${LABEL}\\.){1,3}[a-z]{2,12}$`,
  'idn-email': `^[A-Za-z0-9_+-]{1,32}(?:\\.[A-Za-z0-9_+-]{1,32}){0,2}@(?:${LABEL}\\.){1,3}[a-z]{2,12}$`,
  hostname: `^${HOSTNAME}$`,
  'idn-hostname': `^${HOSTNAME}$`,
  ipv4: `^${OCTET}(?:\\.${OCTET}){3}$`,
  ipv6: `^${HEX_GROUP}(?::${HEX_GROUP}){7}$`,
  uri: `^https?://${HOSTNAME}${PATH}$`,
  url: `^https?://${HOSTNAME}${PATH}$`,
  iri: `^https?://${HOSTNAME}${PATH}$`,
  'uri-reference': `^https?://${HOSTNAME}${PATH}$`,
  'iri-reference': `^https?://${HOSTNAME}${PATH}$`,
  uuid: '^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
};

/** Integer formats (OpenAPI's): the range each allows. */
export const INTEGER_FORMATS: Record<string, [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
};
