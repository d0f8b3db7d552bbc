// @ts-check
// ESLint 9 flat config: `npm run lint`. Type-aware rules read each file's own tsconfig, so a file is
// linted with the same types it is compiled with (Workers types for src/, Node types for Node-side code).
import { existsSync, readdirSync } from "node:fs";
import js from "@eslint/js";
import { defineConfig, globalIgnores } from "eslint/config";
import globals from "globals";
import tseslint from "typescript-eslint";

/** Each TypeScript file and the tsconfig that type-checks it (see `npm run typecheck`). */
const projects = [
  // The Worker: Workers runtime types.
  { files: ["src/**/*.ts"], project: "./tsconfig.json" },
  // Tests that run inside the Workers runtime (vitest-plugin types).
  {
    files: ["test/**/*.ts"],
    ignores: [
      "test/global-setup.ts",
      "test/smtp/**",
      "test/oauth/**",
      "test/webhooks/**",
      "test/e2e/**",
      "test/scripts/**",
    ],
    project: "./test/tsconfig.json",
  },
  // Node side: config files, vitest's global setup, its SMTP servers, sign-in providers and webhook receiver, the
  // end-to-end tests, the dev scripts and their tests.
  {
    files: [
      "*.ts",
      "test/global-setup.ts",
      "test/smtp/**/*.ts",
      "test/oauth/**/*.ts",
      "test/webhooks/**/*.ts",
      "test/e2e/**/*.ts",
      "test/scripts/**/*.ts",
      "scripts/**/*.ts",
    ],
    project: "./tsconfig.node.json",
  },
  // The benchmark's own tsconfigs: its Node-side runner, and its worker entry (Workers types).
  { files: ["bench/run.ts", "bench/scenarios.ts", "bench/lib/**/*.ts"], project: "./bench/tsconfig.json" },
  { files: ["bench/counting-entry.ts"], project: "./bench/tsconfig.worker.json" },
];

/**
 * The areas: each folder of src/ that has a schema.ts owns the tables declared there (and in any schema.ts
 * below it), and only its own files name them. Areas meet only through declared seams (docs/design.md,
 * "Seams"): the modules of another area an area may import, and the tables another area's schema file may
 * reference for a foreign key. Everything else an area needs of another is handed to it at wiring (index.ts):
 * accounts are handed what an account owns in notes, who hears that sessions ended and the audit log's writer; notes
 * are handed who hears that notes changed.
 */
const AREAS = readdirSync(new URL("./src/", import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(new URL(`./src/${entry.name}/schema.ts`, import.meta.url)))
  .map((entry) => entry.name);
/** Per area: the modules of other areas it may import (`notes/*`: every module of notes but its tables). */
const SEAMS = {
  // The audit log's event types and the writer's type; the writer itself is handed over at wiring.
  auth: ["audit/events"],
  notes: ["auth/caller"],
  // Live updates are built on the notes area (its Bearer check, its answers) and may use its modules, but not
  // its tables; the sessions they hold are read only through auth/caller.ts.
  live: ["auth/caller", "notes/*"],
  // The audit log shows each account its own events: it reads the caller through auth/caller.ts.
  audit: ["auth/caller"],
};
/** Per area: the tables of other areas its schema files may reference, for foreign keys. */
const FOREIGN_KEYS = { notes: { auth: ["users"] }, live: { auth: ["sessions", "users"] } };
const missing = AREAS.filter((area) => !(area in SEAMS));
if (missing.length > 0)
  throw new Error(`eslint.config.js: declare the seams of every area in SEAMS: ${missing.join(", ")}`);

/**
 * The import patterns of every area but `area`, less its seams (gitignore-style, as no-restricted-imports reads
 * them: a file is let through only from a folder that is not itself excluded, hence one pattern per depth).
 */
function otherAreas(area) {
  return AREAS.filter((other) => other !== area).flatMap((other) => {
    const tables = [`**/${other}/schema`, `**/${other}/**/schema`];
    if (SEAMS[area].includes(`${other}/*`)) return tables;
    const seams = SEAMS[area].filter((seam) => seam.startsWith(`${other}/`)).map((seam) => `!**/${seam}`);
    return [`**/${other}/*`, `**/${other}/*/*`, `**/${other}/*/*/*`, ...seams, ...tables];
  });
}

/** The rules of one area's files: no module of another area but its seams. */
function areaRules(area) {
  const message = `The ${area} area imports another area only through its seams (eslint.config.js, SEAMS; docs/design.md, "Seams")`;
  return [
    {
      files: [`src/${area}/**/*.ts`],
      rules: { "no-restricted-imports": ["error", { patterns: [{ group: otherAreas(area), message }] }] },
    },
    // Its schema files: besides, the tables FOREIGN_KEYS names, and those only.
    ...Object.entries(FOREIGN_KEYS[area] ?? {}).map(([owner, tables]) => ({
      files: [`src/${area}/schema.ts`, `src/${area}/**/schema.ts`],
      rules: {
        "no-restricted-imports": [
          "error",
          {
            patterns: [
              { group: [...otherAreas(area), `!**/${owner}/schema`], message },
              {
                group: [`**/${owner}/schema`],
                allowImportNames: tables,
                message: `A schema file references another area's table only for a foreign key: ${tables.join(", ")} (eslint.config.js, FOREIGN_KEYS)`,
              },
            ],
          },
        ],
      },
    })),
  ];
}

/**
 * The floors of the accounts area (docs/design.md, "The accounts area's floors"): its ground (src/auth/*.ts: the
 * tables, policy, messages, shapes, the caller; and limits/) imports no core and no capability; `core/` (what
 * every sign-in and account flow uses) imports no capability; each capability folder (every other folder of
 * src/auth/) stands on core and ground and imports no other capability. Only area.ts, which mounts them all,
 * sees every floor.
 */
const AUTH_CAPABILITIES = readdirSync(new URL("./src/auth/", import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !["core", "limits"].includes(entry.name))
  .map((entry) => entry.name);

/** The accounts area's layering rules, each with the area's own seam patterns (a later rule replaces an earlier one). */
function authFloors() {
  const folder = (name) => [`**/${name}/*`, `**/${name}/*/*`];
  const areaPatterns = {
    group: otherAreas("auth"),
    message: "The auth area imports another area only through its seams (eslint.config.js, SEAMS)",
  };
  const rule = (files, group, message) => ({
    files,
    rules: { "no-restricted-imports": ["error", { patterns: [areaPatterns, { group, message }] }] },
  });
  return [
    rule(
      ["src/auth/*.ts", "src/auth/limits/**/*.ts"],
      [...["core", ...AUTH_CAPABILITIES].flatMap(folder), "**/area"],
      "The accounts area's ground (its tables, policy, messages, shapes, caller, limits) imports neither core/ nor a capability",
    ),
    rule(
      ["src/auth/core/**/*.ts"],
      [...AUTH_CAPABILITIES.flatMap(folder), "**/area"],
      "core/ is what every capability of the accounts area stands on: it imports no capability",
    ),
    ...AUTH_CAPABILITIES.map((capability) =>
      rule(
        [`src/auth/${capability}/**/*.ts`],
        [...AUTH_CAPABILITIES.filter((other) => other !== capability).flatMap(folder), "**/area"],
        `Capabilities of the accounts area stand side by side on core/: ${capability}/ imports no other capability`,
      ),
    ),
    // The wiring mounts every capability.
    { files: ["src/auth/area.ts"], rules: { "no-restricted-imports": ["error", { patterns: [areaPatterns] }] } },
  ];
}

export default defineConfig(
  globalIgnores([
    "node_modules/",
    ".wrangler/",
    "dist/",
    ".check/",
    // Generated by `npm run cf-typegen`.
    "worker-configuration.d.ts",
  ]),

  {
    files: ["**/*.{js,mjs,ts}"],
    extends: [js.configs.recommended],
    linterOptions: { reportUnusedDisableDirectives: "error" },
  },

  {
    files: ["**/*.ts"],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { tsconfigRootDir: import.meta.dirname } },
    rules: {
      // Already in recommendedTypeChecked; stated because they matter most here: an unawaited promise
      // loses its error and outlives the request, and a promise passed where a boolean or a void
      // callback is expected is always truthy or never awaited.
      "@typescript-eslint/no-floating-promises": [
        "error",
        // node:test's test()/describe() return promises the runner itself awaits (test/e2e).
        {
          allowForKnownSafeCalls: [
            { from: "package", package: "node:test", name: ["test", "it", "describe", "suite"] },
          ],
        },
      ],
      "@typescript-eslint/no-misused-promises": "error",
      // Type-only imports marked as such, `import()` type annotations included (tsc's verbatimModuleSyntax
      // checks only the first).
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      // Under verbatimModuleSyntax `import { type A } from "x"` still loads "x" at run time: `import type`.
      "@typescript-eslint/no-import-type-side-effects": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  ...projects.map(({ project, ...files }) => ({ ...files, languageOptions: { parserOptions: { project } } })),
  // Any other TypeScript file: the nearest tsconfig.json, if it includes the file; otherwise a parsing
  // error that names the file (add it to a tsconfig and to `projects` above).
  {
    files: ["**/*.ts"],
    ignores: projects.flatMap(({ files }) => files),
    languageOptions: { parserOptions: { projectService: true } },
  },

  {
    files: ["test/**/*.ts"],
    rules: {
      // vitest's asymmetric matchers (expect.stringContaining(), …) are typed `any`, and so are the chunks
      // of the Workers' untyped ReadableStream: in tests these two flag every such use and nothing else.
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      // Tests type a response body with `(await res.json()) as T`; the rule wants `res.json<T>()`, the same unchecked
      // cast.
      "@typescript-eslint/no-unnecessary-type-assertion": "off",
    },
  },

  {
    files: ["src/**/*.ts"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          // `LIMIT ${n}` in an sql`` template, not followed by an operator: a bare `LIMIT ?`.
          selector:
            "TaggedTemplateExpression[tag.name='sql'] TemplateElement[value.raw=/\\bLIMIT\\s*$/i] + TemplateElement:not([value.raw=/^\\s*[-+*]/])",
          message:
            'A bare bound LIMIT makes SQLite compile the statement again every time it is bound: write the value into an expression (`LIMIT ${n} + 1`) or use a constant (CONTRIBUTING.md, "A statement on a hot path").',
        },
        {
          // Drizzle's `.limit(n)` binds `n` as a bare `LIMIT ?`; a rate limiter's `.limit({ key })` takes an object.
          selector: "CallExpression[callee.property.name='limit'][arguments.0.type!='ObjectExpression']",
          message:
            'Drizzle\'s .limit(n) binds a bare LIMIT, which makes SQLite compile the statement again every time: write the LIMIT in sql`` as an expression or a constant (CONTRIBUTING.md, "A statement on a hot path").',
        },
      ],
    },
  },

  ...AREAS.flatMap(areaRules),
  ...authFloors(),
  {
    // The shared floor under the areas: helpers, the database client and the settings know no area.
    files: ["src/lib/**/*.ts", "src/db/**/*.ts", "src/config/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: [...AREAS, "openapi"].flatMap((area) => [`**/${area}`, `**/${area}/**`]),
              message: "lib/, db/ and config/ are the floor every area stands on: they import no area",
            },
          ],
        },
      ],
    },
  },

  // Plain JavaScript is linted without types (no tsconfig covers it); it only needs its globals.
  { files: ["eslint.config.js"], languageOptions: { globals: globals.node } },
  // A module worker: the Workers runtime's globals are the service worker ones (Response, fetch, …).
  {
    files: ["bench/floor-worker.js", "bench/floor-auth-worker.js"],
    languageOptions: { globals: globals.serviceworker },
  },
);
