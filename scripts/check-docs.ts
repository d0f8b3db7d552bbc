/**
 * `npm run check:docs`: what the prose of README.md, CONTRIBUTING.md and docs/*.md points at still exists, so a
 * rename in the code or the docs fails here instead of leaving a page wrong.
 *
 * - Every relative link resolves: its file exists, and its `#anchor` is a heading of that file (GitHub's slugs).
 * - Every constant a page names (a backticked `UPPER_CASE` word outside code blocks) is declared in the code
 *   (a `const` of src/, scripts/, test/, bench/ or a root config file), or is a setting or binding
 *   (src/config/, wrangler.toml; an instance of a pattern such as `OAUTH_<N>_CLIENT_ID` counts), or an
 *   environment variable or CI secret the repository reads.
 * - Every capability page of docs/ has the same four sections, in order (SKELETON); the service's own pages
 *   (SERVICE_PAGES) have theirs.
 * - Where a page gives a constant's value, `` `NAME` (value) ``, the value is the code's: `15 minutes` for a
 *   `…_MS` constant of 15 * MINUTE, `16 KiB` for a `…_BYTES` one, `5` for a count, `30 a minute` for a rate
 *   limiter of wrangler.toml. Values the code computes at run time are not checked.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";
import { sourcesAt } from "./check-settings.ts";
import { wranglerNames } from "./wrangler-toml.ts";

/** The sections of a capability page, in order. */
export const SKELETON = ["What it is", "Rules", "Decisions", "Operations"];
/** The pages of docs/ that are the service's, not a capability's: decisions across it, running it, its figures. */
const SERVICE_PAGES = ["docs/design.md", "docs/operations.md", "docs/performance.md"];

/** Why a capability page's sections are not SKELETON, or undefined when they are. */
export function skeletonProblem(file: string, markdown: string): string | undefined {
  if (!file.startsWith("docs/") || SERVICE_PAGES.includes(file)) return undefined;
  const sections = proseLines(markdown).flatMap((line) => /^## (.*)$/.exec(line)?.[1]?.trim() ?? []);
  if (sections.join("|") === SKELETON.join("|")) return undefined;
  return `${file}: a capability page has the sections ${SKELETON.map((s) => `"## ${s}"`).join(", ")}, in order; it has ${sections.map((s) => `"## ${s}"`).join(", ") || "none"}`;
}

const CONSTANT = /^[A-Z][A-Z0-9]*(?:_(?:[A-Z0-9]+|<[A-Z]+>))+$/;
const UNIT_MS: Record<string, number> = { ms: 1, second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000 };
const UNIT_BYTES: Record<string, number> = { byte: 1, kib: 1024, mib: 1024 * 1024 };

/** The prose lines of a Markdown file (code blocks blanked, so line numbers stay right). */
function proseLines(markdown: string): string[] {
  let code = false;
  return markdown.split("\n").map((line) => {
    if (line.trimStart().startsWith("```")) {
      code = !code;
      return "";
    }
    return code ? "" : line;
  });
}

/** GitHub's anchors of a Markdown file's headings. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** The value of a constant expression: numbers, other constants, `* / + -`; undefined when it is not one. */
function evaluate(node: ts.Expression, known: Map<string, ts.Expression>, depth = 0): number | undefined {
  if (depth > 10) return undefined;
  if (ts.isNumericLiteral(node)) return Number(node.text.replace(/_/g, ""));
  if (ts.isParenthesizedExpression(node)) return evaluate(node.expression, known, depth + 1);
  if (ts.isIdentifier(node)) {
    const value = known.get(node.text);
    return value && evaluate(value, known, depth + 1);
  }
  if (ts.isBinaryExpression(node)) {
    const [left, right] = [evaluate(node.left, known, depth + 1), evaluate(node.right, known, depth + 1)];
    if (left === undefined || right === undefined) return undefined;
    switch (node.operatorToken.kind) {
      case ts.SyntaxKind.AsteriskToken:
        return left * right;
      case ts.SyntaxKind.SlashToken:
        return left / right;
      case ts.SyntaxKind.PlusToken:
        return left + right;
      case ts.SyntaxKind.MinusToken:
        return left - right;
    }
  }
  return undefined;
}

/** The names the code declares as constants, with their value where it is a constant expression. */
export function constantsOf(files: Array<{ file: string; text: string }>): Map<string, number | undefined> {
  const declared = new Map<string, ts.Expression>();
  for (const { file, text } of files) {
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer)
        declared.set(node.name.text, node.initializer);
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  const values = new Map<string, number | undefined>();
  for (const [name, value] of declared) if (CONSTANT.test(name)) values.set(name, evaluate(value, declared));
  return values;
}

/** A value as a page writes it, in the unit of the constant's name; undefined when it is not a value. */
export function statedValue(name: string, stated: string): number | undefined {
  const text = stated
    .trim()
    .toLowerCase()
    .replace(/^about /, "");
  const match =
    /^(\d[\d,]*(?:\.\d+)?|an?)\s*(ms|milliseconds?|seconds?|minutes?|hours?|days?|kib|mib|bytes?)?(?=$|[\s,;])/.exec(
      text,
    );
  if (!match) return undefined;
  const amount = match[1] === "a" || match[1] === "an" ? 1 : Number(match[1]!.replace(/,/g, ""));
  const unit = match[2]?.replace(/s$/, "").replace(/^millisecond$/, "ms");
  if (unit === undefined) return match[1] === "a" || match[1] === "an" ? undefined : amount;
  if (unit in UNIT_MS) {
    const ms = amount * UNIT_MS[unit]!;
    if (name.endsWith("_MS")) return ms;
    if (name.endsWith("_SECONDS")) return ms / 1000;
    return undefined;
  }
  return name.endsWith("_BYTES") ? amount * UNIT_BYTES[unit]! : undefined;
}

interface Known {
  constants: Map<string, number | undefined>;
  /** Settings, bindings, environment variables: names that are not constants of the code. */
  names: Set<string>;
  /** Patterns such as `OAUTH_<N>_CLIENT_ID`, as regular expressions. */
  patterns: RegExp[];
  /** wrangler.toml's rate limiters: `limit` a `period` of seconds. */
  limiters: Map<string, { limit: number; period: number }>;
}

/** Every disagreement of one page with the code, one a line. */
export function problemsOf(file: string, markdown: string, known: Known, exists: (path: string) => string | undefined) {
  const out: string[] = [];
  const lines = proseLines(markdown);
  for (const [i, line] of lines.entries()) {
    const at = `${file}:${i + 1}`;
    for (const [, target] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue;
      const [path, anchor] = target!.split("#") as [string, string | undefined];
      const resolved = path === "" ? file : join(dirname(file), path);
      const text = exists(resolved);
      if (text === undefined) out.push(`${at}: the link ${target} names no file (${resolved})`);
      else if (anchor && resolved.endsWith(".md") && !anchorsOf(text).has(anchor))
        out.push(`${at}: the link ${target} names no heading of ${resolved}`);
    }
    // A value may follow its name on the next line.
    const withNext = `${line}\n${lines[i + 1] ?? ""}`;
    for (const match of withNext.matchAll(/`([A-Z][A-Z0-9<>_]*)`(?:\s+\(([^)]*)\))?/g)) {
      const [, name, stated] = match;
      if (match.index >= line.length || !CONSTANT.test(name!)) continue;
      const isConstant = known.constants.has(name!);
      if (!isConstant && !known.names.has(name!) && !known.patterns.some((pattern) => pattern.test(name!))) {
        out.push(`${at}: ${name} is named, but the code declares no such constant, setting or binding`);
        continue;
      }
      if (stated === undefined) continue;
      const limiter = known.limiters.get(name!);
      const perMinute = /^(\d+) a minute\b/.exec(stated);
      if (limiter && perMinute && (Number(perMinute[1]) !== limiter.limit || limiter.period !== 60))
        out.push(
          `${at}: ${name} is said to allow ${stated}, but wrangler.toml says ${limiter.limit} per ${limiter.period} s`,
        );
      const value = isConstant ? known.constants.get(name!) : undefined;
      const said = statedValue(name!, stated);
      if (value !== undefined && said !== undefined && said !== value)
        out.push(`${at}: ${name} is said to be (${stated}), but the code makes it ${value}`);
    }
  }
  return out;
}

function files(dir: string, keep: (path: string) => boolean): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === "node_modules" || name.startsWith(".")) return [];
    if (statSync(path).isDirectory()) return files(path, keep);
    return keep(path) ? [path] : [];
  });
}

/** What the repository at `root` declares. */
export function knownAt(root: string): Known {
  const code = [
    ...["src", "scripts", "test", "bench"].flatMap((dir) => files(join(root, dir), (path) => /\.(ts|js)$/.test(path))),
    ...readdirSync(root)
      .filter((name) => /\.(ts|js)$/.test(name))
      .map((name) => join(root, name)),
  ];
  const texts = code.map((path) => ({ file: relative(root, path), text: readFileSync(path, "utf8") }));
  const settings = sourcesAt(root);
  const toml = readFileSync(join(root, "wrangler.toml"), "utf8");
  const wrangler = wranglerNames(toml);
  const names = new Set<string>([
    ...[...settings.config.keys()].filter((name) => !name.includes("<")),
    ...wrangler.vars.keys(),
    ...wrangler.secrets,
    ...wrangler.bindings,
  ]);
  const workflows = files(join(root, ".github"), (path) => /\.ya?ml$/.test(path)).map((path) =>
    readFileSync(path, "utf8"),
  );
  for (const text of [...texts.map((t) => t.text), ...workflows])
    for (const [, name] of text.matchAll(/(?:process\.env|secrets|vars|env)\.([A-Z][A-Z0-9_]+)/g)) names.add(name!);
  const patterns = [...settings.config.keys()]
    .filter((name) => name.includes("<"))
    .map((name) => new RegExp(`^${name.replace(/<N>/g, "(?:[A-Z0-9]+|<[A-Z]+>)")}$`));
  const limiters = new Map<string, { limit: number; period: number }>();
  for (const block of toml.split("[[ratelimits]]").slice(1)) {
    const name = /name\s*=\s*"([^"]+)"/.exec(block)?.[1];
    const simple = /limit\s*=\s*(\d+),\s*period\s*=\s*(\d+)/.exec(block);
    if (name && simple) limiters.set(name, { limit: Number(simple[1]), period: Number(simple[2]) });
  }
  return { constants: constantsOf(texts), names, patterns, limiters };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const known = knownAt(root);
  const docs = files(join(root, "docs"), (path) => path.endsWith(".md")).map((path) => relative(root, path));
  const pages = ["README.md", "CONTRIBUTING.md", ...docs];
  const exists = (path: string) => {
    const full = join(root, path);
    if (!existsSync(full)) return undefined;
    return statSync(full).isDirectory() ? "" : readFileSync(full, "utf8");
  };
  const found = pages.flatMap((page) => {
    const markdown = readFileSync(join(root, page), "utf8");
    return [...problemsOf(page, markdown, known, exists), skeletonProblem(page, markdown) ?? []].flat();
  });
  if (found.length > 0) {
    for (const problem of found) console.error(`[check:docs] ${problem}`);
    process.exit(1);
  }
  console.log(
    `[check:docs] ${pages.length} pages: every link resolves, every constant named exists, every value given is the code's, every capability page has its four sections`,
  );
}
