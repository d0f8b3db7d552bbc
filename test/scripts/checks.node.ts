/**
 * The docs' checks of `npm run check` (scripts/check-settings.ts, scripts/check-docs.ts) on Node, against small
 * made-up sources: each disagreement they exist for fails, both ways, and agreement passes.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { anchorsOf, constantsOf, problemsOf, skeletonProblem, statedValue } from "../../scripts/check-docs.ts";
import { problems, settingsReadBy, type Sources } from "../../scripts/check-settings.ts";
import { wranglerNames } from "../../scripts/wrangler-toml.ts";

const CONFIG = `
const prefix = \`OAUTH_\${name.toUpperCase()}_\`;
export function readConfig(env: Env) {
  return {
    cost: intSetting("BCRYPT_COST", env.BCRYPT_COST, 10, 4, 31),
    key: nonEmpty(env.JWT_SECRET_KEY),
    id: dynamic(env, \`\${prefix}CLIENT_ID\`),
    error: \`\${prefix}CLIENT_ID is required\`,
    apple: ["OAUTH_APPLE_TEAM_ID"].map((n) => dynamic(env, n)),
  };
}`;
const TOML = `
[secrets]
required = ["JWT_SECRET_KEY"]

[[ratelimits]]
name = "AUTH_RATE_LIMITER"
simple = { limit = 30, period = 60 }

[vars]
BCRYPT_COST = "10"
APP_URL = ""
`;
const table = (...rows: string[]) =>
  ["# X", "", "## Configuration", "", "| Name | Kind | Default | Meaning |", "|---|---|---|---|", ...rows, ""].join(
    "\n",
  );
const ROWS = [
  "| `BCRYPT_COST` | var | `10` | bcrypt |",
  "| `JWT_SECRET_KEY` | secret | (none) | signs |",
  "| `OAUTH_<N>_CLIENT_ID` | var | (none) | per provider |",
  "| `OAUTH_APPLE_TEAM_ID` | var | (none) | Apple |",
  "| `APP_URL` | var | empty | links |",
];

function sources(readme: string, elsewhere: Array<[string, string]> = []): Sources {
  return {
    config: settingsReadBy("src/config/index.ts", CONFIG),
    elsewhere: new Map(elsewhere),
    optionalSecrets: new Set(),
    wrangler: wranglerNames(TOML),
    readme,
  };
}

describe("check:settings", () => {
  test("reads env.NAME, the names handed to readers, and a name made from a value as its pattern", () => {
    assert.deepEqual(
      [...settingsReadBy("src/config/index.ts", CONFIG).keys()].sort(),
      ["BCRYPT_COST", "JWT_SECRET_KEY", "OAUTH_<N>_CLIENT_ID", "OAUTH_APPLE_TEAM_ID"].sort(),
    );
  });

  test("passes when the table and the code agree", () => {
    assert.deepEqual(problems(sources(table(...ROWS))), []);
  });

  test("fails for a setting read in code and missing from the table", () => {
    assert.deepEqual(problems(sources(table(...ROWS.filter((row) => !row.includes("OAUTH_<N>"))))), [
      "src/config/index.ts:7: OAUTH_<N>_CLIENT_ID is read, but the README's settings table has no row for it",
    ]);
  });

  test("fails for a row naming a setting the code does not read", () => {
    assert.deepEqual(problems(sources(table(...ROWS, "| `SEARCH_LIMIT` | var | `20` | results |"))), [
      "README.md:12: SEARCH_LIMIT is in the settings table, but neither src/config/ nor wrangler.toml reads it",
    ]);
  });

  test("fails for a wrong kind or default, and a setting read outside src/config/", () => {
    const rows = ROWS.map((row) => row.replace("| var | `10` |", "| var | `12` |").replace("| secret |", "| var |"));
    assert.deepEqual(problems(sources(table(...rows), [["DEBUG", "src/lib/log.ts:3"]])), [
      'README.md:7: BCRYPT_COST is "10" in wrangler.toml\'s [vars], but its row\'s default says "`12`"',
      'README.md:8: JWT_SECRET_KEY is a secret, but its row\'s kind says "var"',
      "src/lib/log.ts:3: env.DEBUG is read outside src/config/: read settings in src/config/ (readConfig)",
    ]);
  });
});

describe("check:docs", () => {
  const constants = constantsOf([
    {
      file: "src/a.ts",
      text: "const MINUTE = 60_000; export const CODE_TTL_MS = 15 * MINUTE; export const MAX_TRIES = 5; const KiB = 1024; export const BODY_LIMIT_BYTES = 16 * KiB;",
    },
  ]);
  const known = {
    constants,
    names: new Set(["APP_URL", "AUTH_RATE_LIMITER"]),
    patterns: [/^OAUTH_(?:[A-Z0-9]+|<[A-Z]+>)_CLIENT_ID$/],
    limiters: new Map([["AUTH_RATE_LIMITER", { limit: 30, period: 60 }]]),
  };
  const pages: Record<string, string> = { "docs/a.md": "# A\n\n## Rules: the limits\n", "README.md": "# R\n" };
  const check = (markdown: string) => problemsOf("docs/b.md", markdown, known, (path) => pages[path]);

  test("reads values in the constant's unit", () => {
    assert.equal(statedValue("CODE_TTL_MS", "15 minutes, as the contract says"), 900_000);
    assert.equal(statedValue("X_TTL_SECONDS", "180 days"), 15_552_000);
    assert.equal(statedValue("BODY_LIMIT_BYTES", "1 MiB"), 1_048_576);
    assert.equal(statedValue("MAX_TRIES", "2,000"), 2000);
    assert.equal(statedValue("MAX_TRIES", "`/notes`"), undefined);
    assert.equal(constants.get("CODE_TTL_MS"), 900_000);
  });

  test("makes GitHub's anchors", () => {
    assert.deepEqual(
      [
        ...anchorsOf(
          "## Walk-through: TOTP from an app\n## Try it from /docs\n```\n# not a heading\n```\n## Rules\n## Rules",
        ),
      ],
      ["walk-through-totp-from-an-app", "try-it-from-docs", "rules", "rules-1"],
    );
  });

  test("passes names, patterns, values and links that hold", () => {
    assert.deepEqual(
      check(
        "`CODE_TTL_MS` (15 minutes), `MAX_TRIES`\n(5), `OAUTH_GOOGLE_CLIENT_ID`, `AUTH_RATE_LIMITER` (30 a minute), `BODY_LIMIT_BYTES` (16 KiB).\n" +
          "[a](a.md#rules-the-limits), [r](../README.md), [web](https://example.com/x#y)\n```\n`NOT_CHECKED` [x](nowhere.md)\n```",
      ),
      [],
    );
  });

  test("fails for a renamed constant, a wrong value, a missing file or heading", () => {
    assert.deepEqual(
      check(
        "`CODE_TTL` and `MAX_TRIES` (6); `CODE_TTL_MS`\n  (10 minutes); `AUTH_RATE_LIMITER` (40 a minute)\n[a](a.md#limits) [g](gone.md)",
      ),
      [
        "docs/b.md:1: CODE_TTL is named, but the code declares no such constant, setting or binding",
        "docs/b.md:1: MAX_TRIES is said to be (6), but the code makes it 5",
        "docs/b.md:1: CODE_TTL_MS is said to be (10 minutes), but the code makes it 900000",
        "docs/b.md:2: AUTH_RATE_LIMITER is said to allow 40 a minute, but wrangler.toml says 30 per 60 s",
        "docs/b.md:3: the link a.md#limits names no heading of docs/a.md",
        "docs/b.md:3: the link gone.md names no file (docs/gone.md)",
      ],
    );
  });

  test("holds a capability page to its four sections, in order, and leaves the service's pages theirs", () => {
    const page =
      "# P\n\n## What it is\n\n## Rules\n\n```\n## not a section\n```\n\n## Decisions\n\n## Operations\n\n### More\n";
    assert.equal(skeletonProblem("docs/p.md", page), undefined);
    assert.equal(skeletonProblem("docs/performance.md", "# P\n\n## Method\n"), undefined);
    assert.equal(skeletonProblem("README.md", "# R\n\n## Quick start\n"), undefined);
    assert.equal(
      skeletonProblem("docs/p.md", page.replace("## Decisions", "## Why")),
      'docs/p.md: a capability page has the sections "## What it is", "## Rules", "## Decisions", "## Operations", in order; it has "## What it is", "## Rules", "## Why", "## Operations"',
    );
  });
});
