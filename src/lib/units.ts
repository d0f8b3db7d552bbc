/** Durations in milliseconds, the unit of every timestamp and lifetime in this project. */
export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/** A kibibyte, for body limits. */
export const KiB = 1024;
/** A mebibyte. */
export const MiB = 1024 * KiB;

/** A whole number of days, hours, minutes or seconds in words, for texts that state a constant: "a minute", "10 minutes". */
export function duration(ms: number): string {
  const units: [number, string, string][] = [
    [DAY, "a day", "days"],
    [HOUR, "an hour", "hours"],
    [MINUTE, "a minute", "minutes"],
    [SECOND, "a second", "seconds"],
  ];
  const [size, one, many] = units.find(([unit]) => ms % unit === 0) ?? [1, "a millisecond", "milliseconds"];
  const count = ms / size;
  return count === 1 ? one : `${count} ${many}`;
}
