/** Durations in milliseconds, the unit of every timestamp and lifetime in this project. */
export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/** A kibibyte, for body limits. */
export const KiB = 1024;
