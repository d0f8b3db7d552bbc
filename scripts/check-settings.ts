/**
 * `npm run check:settings`: the README's settings table (the first table of its "Configuration" section) names
 * exactly the settings the code reads, so neither can change without the other.
 *
 * What the code reads:
 * - every `env.NAME` that src/config/ reads (the one place settings are read), and every string in src/config/
 *   that is a setting's whole name and is handed to a call or listed in an array (`intSetting("BCRYPT_COST", …)`,
 *   `dynamic(env, "OAUTH_GITHUB_URL")`, `["OAUTH_APPLE_TEAM_ID", …].map(…)`). A name built from a value
 *   (`${prefix}CLIENT_ID`, prefix being `OAUTH_${name.toUpperCase()}_`) is the pattern `OAUTH_<N>_CLIENT_ID`,
 *   which the table writes as it is;
 * - every name of wrangler.toml's `[vars]` and `[secrets] required`.
 *
 * It fails when a setting read in code is missing from the table, when a row names a setting the code does not
 * read, when a row says `var` of a declared secret or `secret` of a `[vars]` name, when a row's default is not
 * the value wrangler.toml gives (`465` written as `` `465` ``; an empty value leaves the cell free, to say what
 * empty means), and when a module outside src/config/ reads an `env.NAME` that is not a binding of wrangler.toml
 * (settings are read in src/config/ only).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";
import { wranglerNames } from "./wrangler-toml.ts";

/** A setting's name, or a pattern of names made from a value (`OAUTH_<N>_CLIENT_ID`). */
const NAME = /^[A-Z][A-Z0-9]*(?:_(?:[A-Z0-9]+|<N>))*$/;
/** A whole string taken for a setting's name: at least two words, so that `ES256` and the like are not. */
const NAME_IN_STRING = /^[A-Z][A-Z0-9]*(?:_(?:[A-Z0-9]+|<N>))+$/;

/** Where a name was found, for messages: `src/config/index.ts:95`, `wrangler.toml [vars]`. */
export type Found = Map<string, string>;

function add(found: Found, name: string, where: string): void {
  if (!found.has(name)) found.set(name, where);
}

/** `env.NAME` (or `c.env.NAME`, `env["NAME"]`): the name, when the object is an environment. */
function envRead(node: ts.Node): string | undefined {
  const isEnv = (object: ts.Expression) =>
    (ts.isIdentifier(object) && object.text === "env") ||
    (ts.isPropertyAccessExpression(object) && object.name.text === "env");
  if (ts.isPropertyAccessExpression(node) && isEnv(node.expression)) return node.name.text;
  if (ts.isElementAccessExpression(node) && isEnv(node.expression) && ts.isStringLiteral(node.argumentExpression))
    return node.argumentExpression.text;
  return undefined;
}

/** The text of a string or template, each `${value}` written as `<N>` unless it names a string constant of the file. */
function rendered(node: ts.Node, constants: Map<string, ts.Expression>, depth = 0): string | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (!ts.isTemplateExpression(node)) return undefined;
  let text = node.head.text;
  for (const span of node.templateSpans) {
    const value = span.expression;
    const known = ts.isIdentifier(value) && depth < 3 ? constants.get(value.text) : undefined;
    text += (known && rendered(known, constants, depth + 1)) ?? "<N>";
    text += span.literal.text;
  }
  return text;
}

/** The names a module of src/config/ reads: `env.NAME`, and the strings naming a setting it hands to its readers. */
export function settingsReadBy(file: string, text: string): Found {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const constants = new Map<string, ts.Expression>();
  const collect = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer)
      constants.set(node.name.text, node.initializer);
    ts.forEachChild(node, collect);
  };
  collect(source);
  const found: Found = new Map();
  const where = (node: ts.Node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`;
  const visit = (node: ts.Node): void => {
    const read = envRead(node);
    if (read !== undefined && NAME.test(read)) add(found, read, where(node));
    const parent = node.parent as ts.Node | undefined;
    const handedOn =
      parent !== undefined &&
      ((ts.isCallExpression(parent) && parent.arguments.includes(node as ts.Expression)) ||
        ts.isArrayLiteralExpression(parent));
    const name = handedOn ? rendered(node, constants) : undefined;
    if (name !== undefined && NAME_IN_STRING.test(name)) add(found, name, where(node));
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** A row of the README's settings table: its names (the first cell's `NAME`s), its kind and default cells, its line. */
export interface Row {
  names: string[];
  kind: string;
  default: string;
  line: number;
}

export function tableRows(markdown: string): Row[] {
  const lines = markdown.split("\n");
  const section = lines.findIndex((line) => /^##\s+Configuration\b/.test(line));
  if (section < 0) throw new Error('README.md has no "## Configuration" section');
  const rows: Row[] = [];
  let header: string[] | undefined;
  for (let i = section + 1; i < lines.length && !/^##\s/.test(lines[i]!); i++) {
    const line = lines[i]!.trim();
    if (!line.startsWith("|")) {
      if (header) break; // the first table only
      continue;
    }
    const cells = line
      .slice(1, line.endsWith("|") ? -1 : undefined)
      .split("|")
      .map((cell) => cell.trim());
    if (!header) {
      header = cells.map((cell) => cell.toLowerCase());
      continue;
    }
    if (cells.every((cell) => /^:?-+:?$/.test(cell))) continue;
    const names = [...cells[0]!.matchAll(/`([^`]+)`/g)].map((match) => match[1]!).filter((name) => NAME.test(name));
    const cell = (name: string) => cells[header!.indexOf(name)] ?? "";
    rows.push({ names, kind: cell("kind").toLowerCase(), default: cell("default"), line: i + 1 });
  }
  if (rows.length === 0) throw new Error('README.md\'s "## Configuration" section has no table');
  return rows;
}

export interface Sources {
  /** Names src/config/ reads, with where. */
  config: Found;
  /** `env.NAME`s read outside src/config/, with where. */
  elsewhere: Found;
  /** The `OptionalSecrets` src/config/ declares: secrets a deployment may set. */
  optionalSecrets: Set<string>;
  wrangler: ReturnType<typeof wranglerNames>;
  readme: string;
}

/** Every disagreement between the code and the table, one a line; none when they agree. */
export function problems({ config, elsewhere, optionalSecrets, wrangler, readme }: Sources): string[] {
  const found: Found = new Map(config);
  for (const name of wrangler.vars.keys()) add(found, name, "wrangler.toml [vars]");
  for (const name of wrangler.secrets) add(found, name, "wrangler.toml [secrets] required");
  const rows = tableRows(readme);
  const listed = new Map<string, number>();
  const out: string[] = [];
  for (const row of rows) {
    if (row.names.length === 0) out.push(`README.md:${row.line}: a row of the settings table names no setting`);
    for (const name of row.names) {
      if (listed.has(name)) out.push(`README.md:${row.line}: ${name} has a row already (line ${listed.get(name)})`);
      listed.set(name, row.line);
      if (!found.has(name))
        out.push(
          `README.md:${row.line}: ${name} is in the settings table, but neither src/config/ nor wrangler.toml reads it`,
        );
      const secret = wrangler.secrets.has(name) || optionalSecrets.has(name);
      if (secret && !row.kind.includes("secret"))
        out.push(`README.md:${row.line}: ${name} is a secret, but its row's kind says "${row.kind}"`);
      if (wrangler.vars.has(name) && !row.kind.includes("var"))
        out.push(`README.md:${row.line}: ${name} is in wrangler.toml's [vars], but its row's kind says "${row.kind}"`);
      const value = wrangler.vars.get(name);
      if (value && !row.default.includes(`\`${value}\``))
        out.push(
          `README.md:${row.line}: ${name} is "${value}" in wrangler.toml's [vars], but its row's default says "${row.default}"`,
        );
    }
  }
  for (const [name, where] of found) {
    if (!listed.has(name)) out.push(`${where}: ${name} is read, but the README's settings table has no row for it`);
  }
  for (const [name, where] of elsewhere) {
    if (!wrangler.bindings.has(name))
      out.push(`${where}: env.${name} is read outside src/config/: read settings in src/config/ (readConfig)`);
  }
  return out;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

/** The sources as they are in the repository at `root`. */
export function sourcesAt(root: string): Sources {
  const config: Found = new Map();
  const elsewhere: Found = new Map();
  const optionalSecrets = new Set<string>();
  for (const path of sourceFiles(join(root, "src"))) {
    const file = relative(root, path);
    const text = readFileSync(path, "utf8");
    if (file.startsWith(join("src", "config"))) {
      for (const [name, where] of settingsReadBy(file, text)) add(config, name, where);
      const declared = /interface OptionalSecrets \{([\s\S]*?)\n\}/.exec(text)?.[1] ?? "";
      for (const match of declared.matchAll(/^\s*([A-Z][A-Z0-9_]*)\??:/gm)) optionalSecrets.add(match[1]!);
      continue;
    }
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      const read = envRead(node);
      if (read !== undefined && NAME.test(read))
        add(elsewhere, read, `${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`);
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return {
    config,
    elsewhere,
    optionalSecrets,
    wrangler: wranglerNames(readFileSync(join(root, "wrangler.toml"), "utf8")),
    readme: readFileSync(join(root, "README.md"), "utf8"),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const sources = sourcesAt(fileURLToPath(new URL("..", import.meta.url)));
  const found = problems(sources);
  if (found.length > 0) {
    for (const problem of found) console.error(`[check:settings] ${problem}`);
    process.exit(1);
  }
  const count = new Set([...sources.config.keys(), ...sources.wrangler.vars.keys(), ...sources.wrangler.secrets]).size;
  console.log(`[check:settings] the README's settings table names the ${count} settings the code reads, and no other`);
}
