import { defineConfig } from "drizzle-kit";

// drizzle-kit only generates SQL here; `wrangler d1 migrations apply` is the one tracker that applies it.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./drizzle",
});
