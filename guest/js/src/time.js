// Timestamps: `{ seconds: bigint, nanoseconds: number }`, as the contract's
// `timestamp` record arrives in JavaScript, formatted and parsed as RFC 3339
// exactly like the reference (chrono's `to_rfc3339_opts(AutoSi, true)` and
// `DateTime::parse_from_rfc3339`).

import { utf8 } from './text.js';

const SECONDS_PER_DAY = 86_400n;
// chrono's date range: years -262143 to 262142.
const MIN_YEAR = -262_143;
const MAX_YEAR = 262_142;
const NANOS_PER_SECOND = 1_000_000_000;

/** -1, 0 or 1 as `a` is before, at or after `b`. */
export function compareTimestamps(a, b) {
  if (a.seconds !== b.seconds) return a.seconds < b.seconds ? -1 : 1;
  if (a.nanoseconds !== b.nanoseconds) return a.nanoseconds < b.nanoseconds ? -1 : 1;
  return 0;
}

/**
 * RFC 3339 in UTC with as many fraction digits as needed (none, 3, 6 or 9),
 * a leap second as `:60`, or `@seconds.nanoseconds` when the time is outside
 * the range a date can show.
 */
export function formatTimestamp({ seconds, nanoseconds }) {
  const days = floorDiv(seconds, SECONDS_PER_DAY);
  const secondOfDay = Number(seconds - days * SECONDS_PER_DAY);
  const date = days >= -(2n ** 31n) && days < 2n ** 31n ? civilFromDays(Number(days)) : null;
  const leap = nanoseconds >= NANOS_PER_SECOND;
  if (
    date === null ||
    date.year < MIN_YEAR ||
    date.year > MAX_YEAR ||
    nanoseconds >= 2 * NANOS_PER_SECOND ||
    (leap && secondOfDay % 60 !== 59)
  ) {
    return `@${seconds}.${String(nanoseconds).padStart(9, '0')}`;
  }
  const nano = leap ? nanoseconds - NANOS_PER_SECOND : nanoseconds;
  const second = (secondOfDay % 60) + (leap ? 1 : 0);
  const year =
    date.year >= 0 && date.year <= 9999
      ? pad(date.year, 4)
      : (date.year < 0 ? '-' : '+') + pad(Math.abs(date.year), 4);
  const time = `${pad(Math.floor(secondOfDay / 3600), 2)}:${pad(Math.floor(secondOfDay / 60) % 60, 2)}:${pad(second, 2)}`;
  return `${year}-${pad(date.month, 2)}-${pad(date.day, 2)}T${time}${fraction(nano)}Z`;
}

function fraction(nano) {
  if (nano === 0) return '';
  if (nano % 1_000_000 === 0) return `.${pad(nano / 1_000_000, 3)}`;
  if (nano % 1_000 === 0) return `.${pad(nano / 1_000, 6)}`;
  return `.${pad(nano, 9)}`;
}

function pad(n, width) {
  // Most calls pad one digit to two; `padStart` is slow in an interpreter.
  return width === 2 && n < 100 ? (n < 10 ? `0${n}` : `${n}`) : String(n).padStart(width, '0');
}

function floorDiv(a, b) {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
// algorithm), and back.
function civilFromDays(days) {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const mp = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

function daysFromCivil(year, month, day) {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const mp = month > 2 ? month - 3 : month + 9;
  const dayOfYear = Math.floor((153 * mp + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

function daysInMonth(year, month) {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Why chrono refused a time, in its words. */
export class TimestampError extends Error {}
const TOO_SHORT = 'premature end of input';
const INVALID = 'input contains invalid characters';
const OUT_OF_RANGE = 'input is out of range';
const TOO_LONG = 'trailing input';

/**
 * Parses an RFC 3339 time (any offset, `T`, `t` or a space between date and
 * time, any number of fraction digits of which nine count, `:60` as a leap
 * second) to a UTC timestamp. Throws TimestampError. Works on the UTF-8
 * bytes, as chrono does, so the same inputs are refused for the same reason.
 */
export function parseTimestamp(text) {
  const b = utf8(text);
  if (b.length < 19) throw new TimestampError(TOO_SHORT);
  const digits = (from, count) => {
    let n = 0;
    for (let i = from; i < from + count; i += 1) {
      if (b[i] < 0x30 || b[i] > 0x39) throw new TimestampError(INVALID);
      n = n * 10 + (b[i] - 0x30);
    }
    return n;
  };
  const expect = (at, ...chars) => {
    if (!chars.some((c) => b[at] === c.charCodeAt(0))) throw new TimestampError(INVALID);
  };
  const year = digits(0, 4);
  expect(4, '-');
  const month = digits(5, 2);
  expect(7, '-');
  const day = digits(8, 2);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) {
    throw new TimestampError(OUT_OF_RANGE);
  }
  expect(10, 'T', 't', ' ');
  const hour = digits(11, 2);
  expect(13, ':');
  const minute = digits(14, 2);
  expect(16, ':');
  let second = digits(17, 2);
  let nano = 0;
  if (second === 60) [second, nano] = [59, NANOS_PER_SECOND];
  let at = 19;
  if (b[19] === 0x2e) {
    at = 20;
    if (at >= b.length) throw new TimestampError(TOO_SHORT);
    if (b[at] < 0x30 || b[at] > 0x39) throw new TimestampError(INVALID);
    let digitsTaken = 0;
    let value = 0;
    while (at < b.length && b[at] >= 0x30 && b[at] <= 0x39) {
      // Only the first nine digits count; the rest are skipped.
      if (digitsTaken < 9) value = value * 10 + (b[at] - 0x30);
      digitsTaken += 1;
      at += 1;
    }
    nano += value * 10 ** (9 - Math.min(digitsTaken, 9));
  }
  if (hour >= 24 || minute >= 60 || second >= 60 || (nano >= NANOS_PER_SECOND && second !== 59)) {
    throw new TimestampError(OUT_OF_RANGE);
  }
  const [offset, end] = parseOffset(b, at);
  if (end !== b.length) throw new TimestampError(TOO_LONG);
  if (Math.abs(offset) >= 86_400) throw new TimestampError(OUT_OF_RANGE);
  const local = daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
  return { seconds: BigInt(local - offset), nanoseconds: nano };
}

/** `Z`, or `+hh:mm` / `-hh:mm` (also U+2212 MINUS SIGN): seconds east of UTC, and where it ends. */
function parseOffset(b, at) {
  if (b[at] === 0x5a || b[at] === 0x7a) return [0, at + 1];
  let negative;
  if (at >= b.length) throw new TimestampError(TOO_SHORT);
  if (b[at] === 0x2b) [negative, at] = [false, at + 1];
  else if (b[at] === 0x2d) [negative, at] = [true, at + 1];
  else if (b[at] === 0xe2 && b[at + 1] === 0x88 && b[at + 2] === 0x92) [negative, at] = [true, at + 3];
  else throw new TimestampError(INVALID);
  const isDigit = (c) => c >= 0x30 && c <= 0x39;
  if (b.length - at < 2) throw new TimestampError(TOO_SHORT);
  if (!isDigit(b[at]) || !isDigit(b[at + 1])) throw new TimestampError(INVALID);
  const hours = (b[at] - 0x30) * 10 + (b[at + 1] - 0x30);
  at += 2;
  if (at >= b.length) throw new TimestampError(TOO_SHORT);
  if (b[at] !== 0x3a) throw new TimestampError(INVALID);
  at += 1;
  if (b.length - at < 2) throw new TimestampError(TOO_SHORT);
  if (b[at] >= 0x36 && b[at] <= 0x39 && isDigit(b[at + 1])) throw new TimestampError(OUT_OF_RANGE);
  if (!(b[at] >= 0x30 && b[at] <= 0x35) || !isDigit(b[at + 1])) throw new TimestampError(INVALID);
  const minutes = (b[at] - 0x30) * 10 + (b[at + 1] - 0x30);
  const seconds = hours * 3600 + minutes * 60;
  return [negative ? -seconds : seconds, at + 2];
}
