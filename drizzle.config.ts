import { defineConfig } from "drizzle-kit";

// drizzle-kit only generates SQL here; `wrangler d1 migrations apply` is the one tracker that applies it.
export default defineConfig({
  dialect: "sqlite",
  // Each area keeps its tables in its own schema.ts (src/auth, src/notes, src/live): drizzle-kit reads them all.
  schema: "./src/**/schema.ts",
  out: "./drizzle",
});
