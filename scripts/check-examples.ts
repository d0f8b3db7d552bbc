/**
 * `npm run check:examples`: every ```ts block of README.md, CONTRIBUTING.md and docs/*.md is compiled
 * against the project, so a published example cannot drift from the code. Each block is written as if
 * it sat at the repository root (`import type { AppType } from "./src/index"`); it is copied into
 * `.check/examples/` with those imports pointed back at the root, then type-checked by tsc with the
 * project's own settings. Exits non-zero when a block does not compile, naming the file and line.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const outDir = join(root, ".check", "examples");
const docs = [
  "README.md",
  "CONTRIBUTING.md",
  ...readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });

const files: string[] = [];
for (const doc of docs) {
  const path = join(root, doc);
  if (!existsSync(path)) continue;
  const lines = readFileSync(path, "utf8").split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() !== "```ts") continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end]!.trim() !== "```") end++;
    const name = `${doc.replace(/[/.]/g, "_")}_line${start + 1}.ts`;
    const code = lines
      .slice(start, end)
      .join("\n")
      .replace(/(from\s+["'])\.\/(src|test)\//g, "$1../../$2/");
    // `export {}` makes every block a module, so blocks may use top-level await and share no names.
    writeFileSync(join(outDir, name), `// ${doc}, line ${start + 1}\n${code}\nexport {};\n`);
    files.push(name);
    i = end;
  }
}

writeFileSync(
  join(outDir, "tsconfig.json"),
  JSON.stringify(
    {
      extends: "../../tsconfig.json",
      compilerOptions: { types: [] },
      include: ["./*.ts", "../../worker-configuration.d.ts"],
    },
    null,
    2,
  ),
);
const tsc = fileURLToPath(new URL("../node_modules/typescript/bin/tsc", import.meta.url));
const result = spawnSync(process.execPath, [tsc, "-p", join(outDir, "tsconfig.json")], { stdio: "inherit" });
if (result.status !== 0) {
  console.error(
    `[check:examples] a code example does not compile (the files in .check/examples/ name their source line)`,
  );
  process.exit(result.status ?? 1);
}
console.log(`[check:examples] ${files.length} TypeScript example(s) compile: ${files.join(", ")}`);
