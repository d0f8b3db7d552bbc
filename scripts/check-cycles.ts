/**
 * `npm run check:cycles`: fails when modules under src/ import each other in a cycle, type-only imports
 * included (a cycle of types still blurs which module owns a fact). TypeScript's own pre-parser lists each
 * file's imports; only relative ones are followed. A dependency (madge, an ESLint plugin) would do the
 * same with far more installed for it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = fileURLToPath(new URL("..", import.meta.url));
const src = join(root, "src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

function resolveImport(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const base = resolve(dirname(from), specifier);
  return [base, `${base}.ts`, join(base, "index.ts")].find((path) => existsSync(path) && statSync(path).isFile());
}

const imports = new Map<string, string[]>();
for (const file of sourceFiles(src)) {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
  imports.set(
    file,
    importedFiles.map((f) => resolveImport(file, f.fileName)).filter((f) => f !== undefined),
  );
}

// Depth-first search; a module met again while still on the stack closes a cycle.
const done = new Set<string>();
const cycles: string[][] = [];
function visit(file: string, stack: string[]): void {
  const at = stack.indexOf(file);
  if (at !== -1) {
    cycles.push([...stack.slice(at), file]);
    return;
  }
  if (done.has(file)) return;
  for (const next of imports.get(file) ?? []) visit(next, [...stack, file]);
  done.add(file);
}
for (const file of imports.keys()) visit(file, []);

if (cycles.length > 0) {
  for (const cycle of cycles) console.error(`[check:cycles] ${cycle.map((f) => relative(root, f)).join(" -> ")}`);
  process.exit(1);
}
console.log(`[check:cycles] no import cycle among ${imports.size} modules of src/`);
