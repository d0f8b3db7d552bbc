/**
 * `npm run check:sizes`: fails when a module under src/ is longer than MAX_FILE_LINES or a function in one
 * is longer than MAX_FUNCTION_LINES (declarations, methods and arrow functions alike; a chain of routes is
 * not a function, its handlers are). A long module wants splitting by concern, a long function named steps.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

// Lines as Prettier lays them out at 120 columns: a long statement spans several, so the figures are those of
// before the formatter (250 and 50 lines of up to 200 characters) grown by what the formatting commit added.
const MAX_FILE_LINES = 320;
const MAX_FUNCTION_LINES = 70;
/** Modules allowed past MAX_FILE_LINES, and why. */
const LONG_BY_DESIGN: Record<string, string> = {
  "src/auth/schema.ts":
    "the accounts area's tables, each documented where it is declared: the one place to read that area's data model",
};

const root = fileURLToPath(new URL("..", import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

const problems: string[] = [];
let functions = 0;
const files = sourceFiles(join(root, "src"));
for (const file of files) {
  const text = readFileSync(file, "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const name = relative(root, file);
  const lines = source.getLineAndCharacterOfPosition(text.length).line;
  if (lines > MAX_FILE_LINES && !(name in LONG_BY_DESIGN))
    problems.push(`${name}: ${lines} lines (at most ${MAX_FILE_LINES})`);
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      functions++;
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      if (end - start + 1 > MAX_FUNCTION_LINES)
        problems.push(`${name}:${start + 1}: a function of ${end - start + 1} lines (at most ${MAX_FUNCTION_LINES})`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

if (problems.length > 0) {
  for (const problem of problems) console.error(`[check:sizes] ${problem}`);
  process.exit(1);
}
console.log(
  `[check:sizes] ${files.length} modules of src/ within ${MAX_FILE_LINES} lines, ${functions} functions within ${MAX_FUNCTION_LINES}`,
);
