/**
 * The names wrangler.toml declares, read without a TOML parser (the file is ours and simple): shared by
 * `npm run check:settings` and `npm run dev`, which passes on what wrangler itself would not read from `.dev.vars`.
 */

/**
 * wrangler.toml's settings (`[vars]` with their values, `[secrets] required`) and bindings (the names code reaches
 * through env).
 */
export function wranglerNames(toml: string): {
  vars: Map<string, string>;
  secrets: Set<string>;
  bindings: Set<string>;
} {
  const vars = new Map<string, string>();
  const secrets = new Set<string>();
  const bindings = new Set<string>();
  let table = "";
  for (const raw of toml.split("\n")) {
    const line = raw.replace(/\s+#.*$/, "").trim();
    const header = /^\[\[?([^\]]+)\]\]?$/.exec(line);
    if (header) {
      table = header[1]!.trim();
      continue;
    }
    const entry = /^([A-Za-z0-9_]+)\s*=\s*(.*)$/.exec(line);
    if (!entry) continue;
    const [, key, value] = entry as unknown as [string, string, string];
    if (table === "vars") vars.set(key, /^"([^"]*)"$/.exec(value)?.[1] ?? value);
    else if (table === "secrets" && key === "required")
      for (const name of value.matchAll(/"([^"]+)"/g)) secrets.add(name[1]!);
    else if ((key === "binding" || key === "name") && table !== "" && table !== "migrations")
      bindings.add(/^"([^"]*)"/.exec(value)?.[1] ?? value);
  }
  return { vars, secrets, bindings };
}
