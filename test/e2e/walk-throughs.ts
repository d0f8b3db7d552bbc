/**
 * What a walk-through of the docs says, read as the e2e tests run it: the ```sh blocks of a section, each command
 * with the answer its comment shows, whether an output is that answer, and a bash that runs them. Shared by readme.e2e.ts (the
 * walk-throughs) and sharing.e2e.ts (the README's Sharing section).
 *
 * - A line `NAME=<example>   # … mail in the dev terminal …` gets the code of the next mail that holds one (from
 *   `$README_CHECK/mail-code`); a line `NAME=<example>   # … authenticator app shows …` a TOTP code of the shell's
 *   `$SECRET` (from `$README_CHECK/totp`).
 * - A command followed by a comment that starts with a status (`# 201 User created…`, `# 204`) or a JSON body
 *   (`# {"id":1,…}`), on its line or the next, must answer exactly that: a status needs `curl -i`; `…` stands for
 *   any text, an ISO timestamp for any timestamp.
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tail } from "./wrangler-dev.ts";

/** One command of a walk-through, with what it must answer. */
export interface Step {
  /** Where it starts, for messages: `README.md:183`. */
  at: string;
  command: string;
  expected: { status?: number; body?: string } | undefined;
}

/**
 * The ```sh blocks of the sections whose heading matches `heading` (by default those that name a walk-through),
 * and of their subsections.
 */
export function walkThroughBlocks(markdown: string, heading = /walk-through/i): Array<{ line: number; text: string }> {
  const blocks: Array<{ line: number; text: string }> = [];
  let inside: number | undefined; // the level of the walk-through heading we are under
  let block: { line: number; lines: string[] } | undefined;
  for (const [i, line] of markdown.split("\n").entries()) {
    if (block) {
      if (line.startsWith("```")) {
        blocks.push({ line: block.line, text: block.lines.join("\n") });
        block = undefined;
      } else block.lines.push(line);
      continue;
    }
    const title = /^(#+)\s+(.*)$/.exec(line);
    if (title) {
      const level = title[1]!.length;
      if (inside !== undefined && level <= inside) inside = undefined;
      if (inside === undefined && heading.test(title[2]!)) inside = level;
    } else if (line.trim() === "```sh" && inside !== undefined) {
      block = { line: i + 2, lines: [] };
    }
  }
  return blocks;
}

/** An expectation comment: a status and maybe a body, or a JSON body; undefined for prose. */
function expectation(comment: string): Step["expected"] {
  const status = /^(\d{3})(?:\s+(.+))?$/.exec(comment);
  if (status) return { status: Number(status[1]), body: status[2] };
  return /^[[{]/.test(comment) ? { body: comment } : undefined;
}

/** The trailing comment of a command line (a ` # ` outside quotes), and the line without it. */
function splitComment(line: string): { code: string; comment: string | undefined } {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const char = line[i]!;
    if (quote) {
      if (char === quote) quote = undefined;
      else if (char === "\\" && quote === '"') i++;
    } else if (char === "'" || char === '"') quote = char;
    else if (char === "#" && (i === 0 || /\s/.test(line[i - 1]!)))
      return { code: line.slice(0, i).trimEnd(), comment: line.slice(i + 1).trim() };
  }
  return { code: line, comment: undefined };
}

/** What the check puts instead of a value the reader reads elsewhere. */
function readValue(code: string, comment: string | undefined): string {
  const assignment = /^([A-Z_][A-Z0-9_]*)=\S+$/.exec(code);
  if (!assignment || comment === undefined) return code;
  if (/mail in the dev terminal/.test(comment)) return `${assignment[1]}=$(curl -sf "$README_CHECK/mail-code")`;
  if (/authenticator app shows/.test(comment))
    return `${assignment[1]}=$(curl -sf "$README_CHECK/totp?secret=$SECRET")`;
  return code;
}

/**
 * The steps of a block: each command (with its continuation lines) and the answer shown for it; each address of
 * `addresses` the block writes is replaced by the shell variable that holds this run's.
 */
export function stepsOf(
  file: string,
  block: { line: number; text: string },
  addresses: Record<string, string> = {},
): Step[] {
  const steps: Step[] = [];
  const lines = block.text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const at = `${file}:${block.line + i}`;
    const { code, comment } = splitComment(lines[i]!);
    if (code.trim() === "") continue;
    let command = readValue(code, comment);
    let trailing = comment;
    while (command.endsWith("\\") && i + 1 < lines.length) {
      const next = splitComment(lines[++i]!);
      command = `${command}\n${next.code}`;
      trailing = next.comment;
    }
    // The answer: on the command's own line, or the comment line right after it.
    let expected = trailing === undefined ? undefined : expectation(trailing);
    const following = lines[i + 1]?.trim();
    if (!expected && following?.startsWith("#")) expected = expectation(following.slice(1).trim());
    for (const [address, variable] of Object.entries(addresses)) command = command.replaceAll(address, variable);
    steps.push({ at, command, expected });
  }
  return steps;
}

/** The expected text as a pattern: `…` is any text, an ISO timestamp any timestamp, the rest literal. */
function pattern(expected: string): RegExp {
  const iso = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g;
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replaceAll("…", "[\\s\\S]*?");
  const parts = expected.split(iso).map(literal);
  return new RegExp(`^${parts.join("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z")}$`);
}

/** Why the output differs from what the walk-through shows, or undefined. */
export function mismatch(step: Step, output: string): string | undefined {
  const expected = step.expected!;
  const head = /^HTTP\/[\d.]+ (\d{3})[^\n]*\r?\n([\s\S]*?)\r?\n\r?\n/.exec(output);
  if (expected.status !== undefined && !head)
    return `shows status ${expected.status}, but the command prints no status line (curl -i)`;
  if (head && expected.status !== undefined && Number(head[1]) !== expected.status)
    return `shows status ${expected.status}, got ${head[1]}`;
  const body = (head ? output.slice(head[0].length) : output).trim();
  if (expected.body !== undefined && !pattern(expected.body).test(body))
    return `shows ${expected.body}\n  got   ${body}`;
  return undefined;
}

/** What one step printed, on stdout and stderr, and its exit status (undefined: the shell stopped before it). */
export interface Ran {
  output: string;
  error: string;
  status: number | undefined;
}

/**
 * Runs the steps in one bash in `dir` (a new terminal, with `env` beside this process's), each one's output and
 * status kept apart; answers them in order. Not spawnSync: the test process may serve what the script asks for
 * while it runs (the mail codes and TOTP codes of readme.e2e.ts).
 */
export async function runInBash(
  dir: string,
  steps: Step[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<Ran[]> {
  const script = [
    "set -u",
    ...steps.map((step, i) => `{ ${step.command}\n} >"${dir}/${i}.out" 2>"${dir}/${i}.err"; echo $? >"${dir}/${i}.rc"`),
  ].join("\n");
  writeFileSync(join(dir, "walk-through.sh"), script);
  const bash = spawn("bash", [join(dir, "walk-through.sh")], {
    cwd: dir,
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
    timeout: timeoutMs,
  });
  let stderr = "";
  bash.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  await new Promise<void>((resolve, reject) => bash.once("error", reject).once("close", () => resolve()));
  const read = (file: string) => {
    try {
      return readFileSync(join(dir, file), "utf8");
    } catch {
      return undefined;
    }
  };
  return steps.map((_, i) => ({
    output: read(`${i}.out`) ?? "",
    error:
      read(`${i}.err`) ??
      (bash.signalCode ? `bash was stopped (${bash.signalCode}) after ${timeoutMs / 1000} s` : stderr),
    status: read(`${i}.rc`) === undefined ? undefined : Number(read(`${i}.rc`)),
  }));
}

/** Where the steps did not do what the walk-through shows, one a line with where they are; [] when they all did. */
export function failuresOf(steps: Step[], results: Ran[]): string[] {
  const failures: string[] = [];
  for (const [i, step] of steps.entries()) {
    const { output, error, status } = results[i]!;
    const where = `${step.at}: ${step.command.split("\n")[0]}`;
    if (status === undefined) {
      failures.push(`${where}\n  did not run: the shell stopped before it (${tail(error, 3)})`);
      break;
    }
    if (status !== 0) failures.push(`${where}\n  exited with ${status}: ${tail(error, 3)}`);
    else if (step.expected) {
      const why = mismatch(step, output);
      if (why) failures.push(`${where}\n  ${why}`);
    }
  }
  return failures;
}
