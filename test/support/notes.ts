import * as v from "valibot";
import type { Bindings } from "../../src/types";
import { JSON_TYPE } from "./app";

export const Note = v.object({ id: v.number(), title: v.string(), content: v.string(), created_at: v.string() });

export const error = (status: number, message: string) => ({ status, type: JSON_TYPE, body: { error: message } });

/** The settings of live updates: they need private notes (the suite's worker has public ones, as the contract says). */
export const PRIVATE_NOTES: Partial<Bindings> = { NOTES_AUTH: "required" };
